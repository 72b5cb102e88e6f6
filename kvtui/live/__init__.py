"""kvtui.live: real engines' KV events, ingested, recorded and replayed (issue 21).

Modules, one concept each:
    wire        vLLM's KV-event wire format (both event forms, and Dynamo's mocker variant)
    engines     the engines file (`engines: [{name, kv_events, ...}]`)
    subscriber  one ZMQ subscriber per engine: seq tracking, replay of gaps, reconnect backoff
    delivery    what a subscriber hands on (a message, an unfilled gap) and `ingest`
    state       per-engine block maps and the global index, in kvtui's chained keys
    slots       where the app's block map draws each engine's held blocks
    view        the read-only views (kvtui/views.py) and table rows of that state
    describe    one delivery in words (the app's log)
    recording   deliveries in a WAL-store recording, and reading one back
    session     the polling loop that ties them together

Nothing in the engine (sim/, store/, scenario/) imports this package.
"""
