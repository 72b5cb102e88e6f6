"""Prefill/decode disaggregation in words: the decode pick, the wait for room, the transfer and
its cost (kvtui/run/narrate.py dispatches these events here; same rules: pure text, numbers
from the event itself)."""

from __future__ import annotations

from kvtui.events import DecodeRouted, Event, KVTransferDone, KVTransferStarted, KVTransferWaiting


def _mb(nbytes: int) -> str:
    return f"{nbytes / 1e6:,.1f} MB"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def summary(ev: Event) -> str:
    match ev:
        case DecodeRouted(remote=True):
            return f"{ev.request} decodes on {ev.node} after prefill on {ev.prefill_node}: {ev.reason}"
        case DecodeRouted():
            return f"{ev.request} prefills and decodes on {ev.node or 'nobody'}: {ev.reason}"
        case KVTransferWaiting():
            return f"WAIT {ev.request} prefilled on {ev.prefill_node}: {ev.reason}"
        case KVTransferStarted():
            return (f"KV {ev.prefill_node} -> {ev.decode_node}: {ev.blocks} blocks of {ev.request} "
                    f"({_mb(ev.bytes)}, {ev.link}, {_ms(ev.seconds)})")
        case KVTransferDone():
            return f"KV of {ev.request} landed on {ev.decode_node} ({_ms(ev.waited_s)} after its prefill)"
    return ev.kind


def explain(ev: Event) -> str:
    match ev:
        case DecodeRouted():
            return _explain_decode(ev)
        case KVTransferWaiting():
            return (f"{ev.request} is prefilled on {ev.prefill_node}, but {ev.reason}. It waits for room, first come first "
                    f"served, its {ev.blocks} blocks still held on {ev.prefill_node} (vLLM's NIXL connector keeps them "
                    f"until the decode side reads them; the map shows them in use, not yet in flight); its TTFT grows meanwhile.")
        case KVTransferStarted():
            return _explain_transfer(ev)
        case KVTransferDone():
            return (f"The KV of {ev.request} arrived on {ev.decode_node}, {_ms(ev.waited_s)} after its prefill ended on "
                    f"{ev.prefill_node}: {ev.prefill_node} frees its copy (still cached there for later prompts) and "
                    f"{ev.decode_node} registers the {ev.blocks} blocks and computes the last prompt token, whose "
                    f"logits give the first output token. Neither map shows those blocks in flight any more.")
    return summary(ev)


def _explain_decode(ev: DecodeRouted) -> str:
    if ev.node is None:
        return f"No decode node can take {ev.request}: {ev.reason}."
    pick = f"{ev.policy} picks {ev.node} to decode {ev.request}: {ev.reason}."
    if ev.remote:
        return (f"{pick} Its prompt is prefilled on {ev.prefill_node} first; then the blocks {ev.node} lacks move there "
                f"and its first token comes from {ev.node}.")
    return f"{pick} It is prefilled there too, so no KV moves."


def _explain_transfer(ev: KVTransferStarted) -> str:
    out = [f"{ev.decode_node} allocated {ev.request}'s prompt: it held {ev.hit_blocks} blocks already, "
           f"{ev.blocks} come from {ev.prefill_node}."]
    if ev.blocks:
        rate = ev.bytes / max(ev.seconds, 1e-12) / 1e9
        out.append(f"That is {ev.blocks} blocks x {ev.bytes // ev.blocks:,} bytes = {_mb(ev.bytes)} over {ev.link}: "
                   f"bytes / bandwidth + latency = {_ms(ev.seconds)} ({rate:.1f} GB/s in effect).")
    if ev.queued_s > 0:
        out.append(f"It first waits {_ms(ev.queued_s)} behind earlier transfers on the same link.")
    if ev.blocks:
        out.append(f"Both copies stay pinned until it lands, and the maps mark those {ev.blocks} blocks in flight on "
                   f"{ev.prefill_node} and on {ev.decode_node} meanwhile; the {ev.hit_blocks} already there show in use.")
    else:
        out.append("Nothing moves: the decode node runs it from its own cache.")
    return " ".join(out)


def life_step(ev: Event) -> str:
    match ev:
        case DecodeRouted():
            where = f"after prefill on {ev.prefill_node}" if ev.remote else "prefilled there too"
            return f"decode node {ev.node or 'none'} ({where}): {ev.reason}"
        case KVTransferWaiting():
            return f"prefilled; waits for room on {ev.decode_node}: {ev.reason}"
        case KVTransferStarted():
            return (f"transfer {ev.prefill_node} -> {ev.decode_node}: {ev.blocks} blocks ({_mb(ev.bytes)}) over {ev.link}, "
                    f"queued {_ms(ev.queued_s)}, {_ms(ev.seconds)} on the wire; {ev.hit_blocks} already there")
        case KVTransferDone():
            return f"KV landed on {ev.decode_node}, {_ms(ev.waited_s)} after the prefill"
    return ev.kind
