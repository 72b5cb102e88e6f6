"""What the router believes each engine holds, against what the engine holds: the app's Belief
panel, read off a simulation or off a live or recorded run's events.

Per engine and storage tier, the blocks the router's index credits it with against the blocks
it holds, and per engine the requests routed to it with available against achieved: the
longest prefix the best engine had for each request against what the chosen one had. Their gap
is the hit rate the router gave away, whatever the reason (load, the policy's own weighing, a
stale index). The totals are the figures `kvtui run` prints (the result document's
`routing.available`, kvtui/sim/router/router.py `available_report`) and `live` / `replay
--no-ui` print (kvtui/live/available.py), for the same seed or recording.

What each kind of run can say differs, and the view says only that:
- a simulation knows the pools, so each tier's row counts the blocks credited and not held
  (evicted, their removal not yet delivered to the index) and held and not credited (stored, not
  yet published at step end, as vLLM 0.33.0 publishes, or delivered `router.index.delay_ms`
  late); available and chosen are what the pools held at the decision (an oracle);
- a real engine is known only by what it publishes: the index is its KV events as received,
  its `/metrics` says how many blocks its running requests use (vLLM's kv_cache_usage_perc is
  1 - free / total, and a cached block no request uses is free, so this is not the cached
  count), and the index's staleness shows per request: promised by the index and not served by
  the engine, or served unpromised. Available and chosen are what the index credited (all a
  router can know), achieved is what the engine served.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvtui.events import Event, KVBatchReceived, MissesAttributed, RouteDecided


@dataclass(frozen=True)
class TierRow:
    tier: str  # gpu | cpu | any (an approximate index credits a node, not a tier)
    credited: int  # blocks the router's index credits the engine with
    holds: int | None  # blocks it holds (a simulation's pool; a real engine's /metrics: in use)
    wrong: int | None  # credited and not held (simulation only)
    unknown: int | None  # held and not credited (simulation only)


@dataclass(frozen=True)
class Routed:
    """Requests routed to an engine (or to all), in prompt blocks."""

    requests: int = 0
    prompt_blocks: int = 0
    available: int = 0  # the best any engine had, summed
    chosen: int = 0  # what the chosen engine had, summed
    served: int | None = None  # what it served from its cache (a real engine's answer)
    stale: int = 0  # requests where the index and the engine disagreed on the chosen one
    promised_unserved: int | None = None  # blocks (real engines)
    served_unpromised: int | None = None

    def rate(self, blocks: int | None) -> float | None:
        return None if blocks is None or not self.prompt_blocks else blocks / self.prompt_blocks

    @property
    def given_away(self) -> float | None:
        """Points of prompt blocks (as a fraction) the best engine had beyond the chosen one."""
        return self.rate(self.available - self.chosen)


@dataclass(frozen=True)
class EngineBelief:
    name: str
    up: bool
    tiers: tuple[TierRow, ...]
    routed: Routed
    heard_s: float | None = None  # since its last KV-event batch reached kvtui (real engines)
    gaps: int = 0  # its batches lost (real engines)
    metrics: str = ""  # what its last /metrics read said (real engines)
    unpublished: bool = False  # a simulated node holding a step's KV events back (vLLM publishes at step end)


@dataclass(frozen=True)
class BeliefView:
    live: bool  # a real engines' run (the columns mean what the module doc says)
    headline: str
    engines: tuple[EngineBelief, ...]
    total: Routed


# ---------------------------------------------------------------------------- a simulation
def simulated_belief(sim) -> BeliefView | None:
    """The view of a simulation (kvtui/sim/engine.py) as it stands; None without a router."""
    router = sim.router
    if router is None:
        return None
    s = router.stats
    total = Routed(s["decisions"], s["prompt_blocks"], s["available_blocks"], s["chosen_blocks"],
                   stale=s["stale_decisions"])
    engines = tuple(_simulated_node(router, node) for node in sim.nodes)
    return BeliefView(False, _simulated_headline(router, sim.control_plane is not None), engines, total)


def _simulated_node(router, node) -> EngineBelief:
    kv = node.kv
    if router.approx is not None:
        held = set(kv.pool.cached) | (set(kv.cpu.entries) if kv.cpu is not None else set())
        credited = router.approx.keys_on(node.name)
        wrong = len(credited - held)
        tiers: tuple[TierRow, ...] = (TierRow("any", len(credited), len(held), wrong, len(held) - len(credited) + wrong),)
    else:
        tiers = (_tier(router.index, node.name, "gpu", kv.pool.cached),)
        if kv.cpu is not None:
            tiers += (_tier(router.index, node.name, "cpu", kv.cpu.entries),)
    d, blocks, available, chosen, stale = router.by_node[node.name]
    return EngineBelief(node.name, node.up, tiers, Routed(d, blocks, available, chosen, stale=stale),
                        unpublished=node.has_unpublished)


def _tier(index, name: str, medium: str, held) -> TierRow:
    credited, wrong, unknown = index.gap(name, medium, held)
    return TierRow(medium, credited, len(held), wrong, unknown)


def _simulated_headline(router, store: bool) -> str:
    if router.approx is not None:
        kind = "approximate index: what the router sent each node, no KV events"
    elif router.delay > 0:
        kind = f"precise index: KV events {router.delay * 1000:g} ms late"
    else:
        kind = "precise index: KV events as published (at step end)"
    via = " through the control plane's log" if store else ""
    s = router.stats
    return f"{kind}{via} · stale at {s['stale_decisions']:,}/{s['decisions']:,} decisions"


# ---------------------------------------------------------------------------- real engines
@dataclass
class RoutedTally:
    """A live or recorded run's routed requests and KV batches, fed the run's events in order
    (kvtui/run/live.py keeps one per picture, so a step back takes it back too)."""

    best: dict[str, int] = field(default_factory=dict)  # request -> the most any engine was promised
    # engine -> [requests, prompt blocks, available, chosen, served, stale, promised unserved, served unpromised]
    counts: dict[str, list[int]] = field(default_factory=dict)
    heard: dict[str, float] = field(default_factory=dict)  # engine -> time of its last batch

    def on_event(self, ev: Event) -> None:
        match ev:
            case RouteDecided():
                self.best[ev.request] = max((int(c.feature("prefix")) for c in ev.candidates), default=0)
            case MissesAttributed():
                c = self.counts.setdefault(ev.node, [0] * 8)
                more = max(0, ev.promised - ev.hit)
                for i, v in enumerate((1, ev.prompt_blocks, self.best.pop(ev.request, 0), ev.promised, ev.hit,
                                       int(more > 0 or ev.unpromised_hits > 0), more, ev.unpromised_hits)):
                    c[i] += v
            case KVBatchReceived():
                self.heard[ev.node] = ev.t

    def routed(self, name: str | None = None) -> Routed:
        rows = [self.counts.get(name, [0] * 8)] if name is not None else list(self.counts.values())
        s = [sum(r[i] for r in rows) for i in range(8)]
        return Routed(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7])


def live_belief(engines, tally: RoutedTally, now: float) -> BeliefView:
    """The view of real engines: `engines` is the run's EnginesPicture (kvtui/live/view.py)."""
    rows = tuple(_live_engine(e, tally, now) for e in engines.engines.values())
    keys, shared = engines.index_figures()
    headline = (f"index from the engines' KV events as received: {keys:,} keys, {shared:,} on more than one engine; "
                f"staleness shows per request (promised against served)")
    return BeliefView(True, headline, rows, tally.routed())


def _live_engine(e, tally: RoutedTally, now: float) -> EngineBelief:
    sc = e.scrape
    in_use = None
    if sc is not None and sc.kv_usage is not None and sc.num_gpu_blocks:
        in_use = round(sc.kv_usage * sc.num_gpu_blocks)
    tiers: tuple[TierRow, ...] = (TierRow("gpu", len(e.held.get("gpu", ())), in_use, None, None),)
    if e.offloaded():
        tiers += (TierRow("cpu", e.offloaded(), None, None, None),)
    heard = tally.heard.get(e.name)
    return EngineBelief(e.name, True, tiers, tally.routed(e.name), None if heard is None else max(0.0, now - heard),
                        e.gaps, _metrics_said(e, now))


def _metrics_said(e, now: float) -> str:
    sc = e.scrape
    if sc is None:
        return ""
    if sc.error is not None:
        since = f" (last good read {now - e.fresh_at:.1f} s ago)" if e.fresh_at is not None else ""
        return f"its /metrics did not read: {sc.error}{since}"
    parts = []
    if sc.kv_usage is not None:
        of = f" of {sc.num_gpu_blocks:,} blocks" if sc.num_gpu_blocks else ""
        parts.append(f"{100 * sc.kv_usage:.0f}%{of} in use by running requests")
    if sc.hit_rate is not None:
        parts.append(f"prefix-cache hit rate {100 * sc.hit_rate:.0f}%")
    said = ", ".join(parts) or "nothing of its cache"
    return f"its /metrics said {said} ({now - sc.t:.1f} s ago)"


# ---------------------------------------------------------------------------- in words
def _pct(r: float | None) -> str:
    return "-" if r is None else f"{100 * r:.1f}%"


def why(view: BeliefView, name: str) -> str:
    """The selected engine's belief and routing in words."""
    e = next((x for x in view.engines if x.name == name), None)
    if e is None:
        return ""
    return " ".join([_held_words(e, view.live), _routed_words(e.routed, view.live)])


def _held_words(e: EngineBelief, live: bool) -> str:
    if live:
        tiers = " and ".join(f"{t.credited:,} {t.tier.upper()} blocks" for t in e.tiers)
        heard = "no KV-event batch yet" if e.heard_s is None else f"its last batch {e.heard_s:.1f} s ago"
        lost = f", {e.gaps} batches lost (what they said is missing)" if e.gaps else ""
        said = f" {e.metrics[0].upper()}{e.metrics[1:]}." if e.metrics else " No /metrics read."
        return f"{e.name}: the index holds {tiers} from its KV events, {heard}{lost}.{said}"
    out = [f"{e.name}{'' if e.up else ' (down)'}:"]
    for t in e.tiers:
        where = "in any tier" if t.tier == "any" else f"in {t.tier.upper()}"
        out.append(f"the index credits it with {t.credited:,} blocks {where}, it holds {t.holds:,}"
                   + (f": {t.wrong:,} credited that it no longer holds (evicted, the removal not yet in the index)"
                      if t.wrong else "")
                   + (f"{';' if t.wrong else ':'} {t.unknown:,} held that the index has not heard of" if t.unknown else "")
                   + ".")
    if e.unpublished:
        out.append("It holds a step's KV events back (vLLM publishes at step end).")
    return " ".join(out)


def _routed_words(r: Routed, live: bool) -> str:
    if not r.requests:
        return "No request routed here yet."
    said = "the index credited the best engine with" if live else "the best engine held"
    text = (f"{r.requests:,} requests routed here, {r.prompt_blocks:,} prompt blocks: {said} "
            f"{_pct(r.rate(r.available))} of them, this one {_pct(r.rate(r.chosen))} "
            f"({100 * (r.given_away or 0):.1f} pp given away).")
    if live:
        return (text + f" It served {_pct(r.rate(r.served))}: {r.promised_unserved:,} blocks promised and not served "
                f"(a stale index), {r.served_unpromised:,} served unpromised.")
    if r.stale:
        text += f" The index disagreed with its pool at {r.stale:,} of these decisions."
    return text
