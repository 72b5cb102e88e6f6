"""kvtui.live: real engines' KV events, ingested, recorded and replayed, and route mode (issue 21).

Modules, one concept each:
    wire        vLLM's KV-event wire format (both event forms, and Dynamo's mocker variant)
    engines     the engines file (`engines: [{name, kv_events, ...}]`)
    subscriber  one ZMQ subscriber per engine: seq tracking, replay of gaps, reconnect backoff
    replay_request  one replay request, read without blocking
    delivery    what a subscriber hands on (a message, an unfilled gap), a scrape, a served request; `ingest`
    keys        per-request key inputs (adapter, cache_salt, media) folded into block keys, as vLLM hashes them
    state       per-engine block maps and the global index, in kvtui's chained keys
    translate   deliveries as the project's events (kvtui/events.py): what every run speaks
    slots       where the app's block map draws each engine's held blocks
    view        the read-only views (kvtui/views.py) of real engines, fed by those events
    metrics     an engine's Prometheus /metrics, read in vLLM's names
    scraper     scraping them once a second, off the ingest loop
    routing     route mode's decisions: kvtui's policies over snapshots of the live state
    proxy       route mode's OpenAI-compatible proxy
    forensics   every missed prompt block of a routed request, with its cause
    recording   deliveries in a WAL-store recording, and reading one back
    session     the polling loop that ties them together
    etcd_url    `--metadata etcd://HOST:PORT,...[/CLUSTER]`
    etcd_link   aetcd's asyncio client on a thread of its own (the optional extra kvtui[etcd])
    etcd_election  the routing lease: campaign, keep-alive, resign (Mooncake's master election)
    etcd_snapshot  route mode's state as etcd keys, and restoring it
    etcd_keeper the leader's writes, one fenced transaction per batch
    etcd_backend   a takeover: the lease won, the snapshot read, the keeper attached

Nothing in the engine (sim/, store/, scenario/) imports this package.
"""
