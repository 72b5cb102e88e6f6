"""The limits live mode keeps against a hostile network, as a markdown table (docs/live.md's
generated block: `python docs/generate.py --write --only live_limits`). The values are read
from the code, so the page cannot drift from it."""

from __future__ import annotations

from kvtui.live import proxy, proxy_io, replay_request, scraper, state, subscriber, wire
from kvtui.run import live

ROWS = [
    ("a block size (`MAX_BLOCK_SIZE`)", f"1 to {wire.MAX_BLOCK_SIZE:,}"),
    ("a replay answer (`REPLAY_MAX`)", f"{replay_request.REPLAY_MAX:,} batches, {replay_request.REPLAY_DEADLINES} replay timeouts"),
    ("batches held while a replay request is open (`WAITING_MAX`)", f"{subscriber.WAITING_MAX:,}"),
    ("messages per poll and engine (`DRAIN_MAX`)", f"{subscriber.DRAIN_MAX:,}"),
    ("batches remembered to tell a duplicate (`RECENT`)", f"{subscriber.RECENT:,}"),
    ("blocks held per engine (`HELD_MAX`), adapter names (`ADAPTERS_MAX`)",
     f"{state.HELD_MAX:,} (then the oldest go, counted `over cap`), {state.ADAPTERS_MAX:,}"),
    ("a ZMQ message (`MAX_FRAME_BYTES`)", f"{subscriber.MAX_FRAME_BYTES >> 20} MiB"),
    ("a /metrics scrape (`DEADLINE_S`, `MAX_BYTES`)", f"{scraper.DEADLINE_S:g} s, {scraper.MAX_BYTES >> 20} MiB"),
    ("a request body (`MAX_BODY`)", f"{proxy_io.MAX_BODY >> 20} MiB"),
    ("an engine's whole answer (`MAX_ANSWER`), a streamed line (`MAX_LINE`)",
     f"{proxy_io.MAX_ANSWER >> 20} MiB, {proxy_io.MAX_LINE >> 20} MiB"),
    ("`max_tokens` (`MAX_TOKENS`)", f"0 to {proxy_io.MAX_TOKENS:,}"),
    ("a client's silence (`CLIENT_TIMEOUT_S`)", f"{proxy.CLIENT_TIMEOUT_S:g} s"),
    ("an engine's silence (`ENGINE_TIMEOUT_S`, `TOKENIZE_TIMEOUT_S`)",
     f"{proxy_io.ENGINE_TIMEOUT_S:g} s, {proxy_io.TOKENIZE_TIMEOUT_S:g} s"),
    ("requests at once (`MAX_CLIENTS`)", f"{proxy.MAX_CLIENTS:,}"),
    ("the app's history (`HISTORY_KEPT`, `HISTORY_BYTES`)", f"{live.HISTORY_KEPT:,} deliveries, {live.HISTORY_BYTES >> 20} MiB"),
]

if __name__ == "__main__":
    print("| limit | value |\n|---|---|")
    print("\n".join(f"| {what} | {value} |" for what, value in ROWS))
