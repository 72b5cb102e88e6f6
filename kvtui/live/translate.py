"""What real engines said, as the project's events (kvtui/events.py): the one vocabulary every
run speaks, so a live or recorded run goes through the same journal, metrics, narration and
views as a simulation (kvtui/run/live.py).

A `Translator` ingests each delivery into its own `LiveState` (kvtui/live/state.py keys the
blocks as llm-d does) and says what the delivery did as events, numbered from 1 and timed in
seconds from the first delivery:

- a KV-event batch: `KVBatchReceived` (its seq, replayed or not, blocks per medium, orphans),
  then one `BlocksStored` per stored run of blocks (`group`: the prefix it belongs to, as the
  block map colours it; `request` empty: KV events name no request), one `BlocksEvicted` per
  removal, a `NodeCacheCleared` for an AllBlocksCleared; a message that does not decode,
  `KVMessageMalformed`;
- a gap replay could not fill, `KVEventsLost`; a restart, `EngineRestarted` and the cleared
  cache; the start of watching, `EngineWatched`; a `/metrics` read, `EngineScraped`;
- a request route mode served (kvtui/live/proxy.py): `RequestArrived`, `RouteDecided` (every
  engine a candidate with the prefix the index promised it), `FirstToken` (the proxy's TTFT),
  `MissesAttributed` (kvtui/live/forensics.py) and `RequestCompleted` (the proxy's E2E; its
  TPOT over the output tokens after the first). Route mode hands a request on once answered,
  so its events all carry that time.

Media: the engine's GPU is `gpu`, every offloaded medium `cpu` (as the index scores them).
The same deliveries give the same events, live or from a recording: a digest of the stream
is the test of that (tests/run/test_live_source.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from kvtui.events import (
    BlocksEvicted,
    BlocksStored,
    Candidate,
    EngineRestarted,
    EngineScraped,
    EngineWatched,
    Event,
    FirstToken,
    KVBatchReceived,
    KVEventsLost,
    KVMessageMalformed,
    MissesAttributed,
    NodeCacheCleared,
    RequestArrived,
    RequestCompleted,
    RouteDecided,
)
from kvtui.live.delivery import Delivery, Gap, Received, Restarted, Scraped, Served, Watching, ingest
from kvtui.live.state import LiveState
from kvtui.live.wire import AllBlocksCleared, BlockRemoved, BlockStored, Malformed, decode_message

DEFAULT_BLOCK_SIZE = 16  # vLLM's, until a batch or a /metrics read says the engine's


def medium_of(medium: str) -> str:
    """The project's tier name of a published medium: the GPU, or an offloaded tier."""
    return "gpu" if medium == "GPU" else "cpu"


class Translator:
    def __init__(self) -> None:
        self.state = LiveState()
        self.seq = 0
        self.start: float | None = None
        self.block_size = DEFAULT_BLOCK_SIZE

    def events(self, delivery: Delivery) -> list[Event]:
        """Ingest `delivery`; what it did, as events."""
        if self.start is None:
            self.start = delivery.at
        t = delivery.at - self.start
        self.state.changes = []
        ingest(self.state, delivery)
        changes, self.state.changes = self.state.changes, None
        fields = list(self._fields(delivery, changes))
        out = []
        for cls, *values in fields:
            self.seq += 1
            out.append(cls(self.seq, t, *values))
        return out

    def _fields(self, d: Delivery, changes: list[tuple]) -> Iterable[tuple]:
        """(event class, its fields after seq and t) for each event of `d`."""
        match d:
            case Watching():
                yield EngineWatched, d.engine
            case Received():
                yield from self._batch(d, changes)
            case Gap():
                yield KVEventsLost, d.engine, d.first_missing, d.missing
            case Restarted():
                yield EngineRestarted, d.engine, d.last_seq, d.seq
                yield from _blocks(changes)
            case Scraped(figures=f):
                if f.block_size:
                    self.block_size = f.block_size
                yield (EngineScraped, d.engine, f.num_gpu_blocks, f.kv_usage, f.running, f.waiting, f.hit_rate,
                       f.error, f.skipped)
            case Served():
                yield from self._served(d)

    def _batch(self, d: Received, changes: list[tuple]) -> Iterable[tuple]:
        try:
            batch = decode_message(list(d.frames))
        except Malformed as e:
            yield KVMessageMalformed, d.engine, e.kind, str(e)
            return
        stored: Counter[str] = Counter()
        removed: Counter[str] = Counter()
        for published in batch.events:
            match published:
                case BlockStored():
                    stored[medium_of(published.medium)] += len(published.block_hashes)
                    self.block_size = published.block_size
                case BlockRemoved():
                    removed[medium_of(published.medium)] += len(published.block_hashes)
        cleared = any(isinstance(p, AllBlocksCleared) for p in batch.events)
        orphans = sum(c[2] for c in changes if c[0] == "orphans")
        yield (KVBatchReceived, d.engine, batch.seq, d.replayed, tuple(sorted(stored.items())),
               tuple(sorted(removed.items())), cleared, orphans)
        yield from _blocks(changes)

    def _served(self, s: Served) -> Iterable[tuple]:
        f, bs = s.forensics, self.block_size
        candidates = tuple(Candidate(name, score, (("prefix", float(promised)),), eligible)
                           for name, score, promised, eligible in s.candidates)
        yield RequestArrived, s.request, "", "", 1, s.prompt_tokens, s.output_tokens
        full = s.prompt_tokens // bs if s.prompt_tokens else f.prompt_blocks
        yield (RouteDecided, s.request, s.engine, s.policy or "route mode", s.reason, candidates, full, "",
               _margin(candidates, s.engine))
        ttft = s.e2e_s if s.ttft_s is None else s.ttft_s
        if s.ttft_s is not None:
            yield FirstToken, s.request, s.engine, s.ttft_s
        yield (MissesAttributed, s.request, s.engine, f.prompt_blocks, f.promised, f.hit, f.causes,
               f.unpromised_hits, f.evicted_in)
        cached = min(f.hit * bs, s.prompt_tokens) if s.prompt_tokens else f.hit * bs
        tpot = (s.e2e_s - ttft) / (s.output_tokens - 1) if s.output_tokens > 1 else 0.0
        yield (RequestCompleted, s.request, s.engine, "", "", s.prompt_tokens, s.output_tokens, cached,
               "prefix" if f.hit else "miss", ttft, tpot, s.e2e_s, 0)


def _margin(candidates: tuple[Candidate, ...], chosen: str) -> float:
    """The pick's lead over the best other eligible engine, in the policy's score (0: alone)."""
    pick = next((c.score for c in candidates if c.node == chosen), 0.0)
    others = [c.score for c in candidates if c.node != chosen and c.eligible]
    return round(pick - max(others), 6) if others else 0.0


def _blocks(changes: list[tuple]) -> Iterable[tuple]:
    """The block events of what the state noted (kvtui/live/state.py `changes`)."""
    for change in changes:
        match change:
            case ("stored", engine, medium, keys, parent, owner) if keys:
                yield BlocksStored, engine, "", owner, keys, parent, -1, medium_of(medium)
            case ("removed", engine, medium, gone) if gone:
                yield (BlocksEvicted, engine, tuple(k for k, _ in gone), tuple(o for _, o in gone), "",
                       medium_of(medium))
            case ("cleared", engine, held):
                yield NodeCacheCleared, engine, held


def translate(deliveries: Iterable[Delivery]) -> list[Event]:
    """Every event of a whole recording (what `kvtui replay` and its digest read)."""
    t = Translator()
    return [ev for d in deliveries for ev in t.events(d)]
