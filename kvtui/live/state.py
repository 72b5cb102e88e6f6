"""Per-engine block maps and the global KV index, built from real engines' events.

Keyed as llm-d keys them (llm-d-kv-cache-manager, pkg/kvcache/kvevents/pool.go,
`processEventBatch`, commit 3f720e8): a BlockStored's token ids are rehashed into the indexer's
own keys, chained from the key its parent engine hash maps to, and a map from the engine's block
hashes to those keys lets BlockRemoved, which carries only engine hashes, find them. kvtui's keys
are the simulator's chained keys (kvtui/sim/workload/hashing.py `chain_keys`), so a real
engine's blocks and a simulated one's share one key space and one index.

A BlockStored whose parent hash is unknown (the subscriber joined late, or lost a gap) cannot
be keyed: llm-d skips it, and so does kvtui, counting its blocks as `orphans` (a later
BlockRemoved of them counts as `unknown_removed`). The adapter, `cache_salt`, multimodal inputs
and prompt embeddings an engine folded into a block's hash are folded into its key
(kvtui/live/keys.py).

Memory is bounded however much an engine claims: past HELD_MAX held blocks (every medium, orphan
GPU cells with them) the oldest stored go, down to a tenth under the cap, counted as `over_cap`
on the engine's line. No real engine holds that many (an H100's KV cache for an 8B model is
about 30,000 blocks of 16 tokens), so an engine over it is claiming blocks it does not hold, or
never publishes their removal. A later BlockRemoved of a block let go counts as
`unknown_removed`, and a BlockStored under it is an orphan. Adapter names past ADAPTERS_MAX are
not kept (`adapters_over_cap`): their blocks are still keyed under them.
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field
from itertools import islice


from kvtui.live.metrics import EngineFigures
from kvtui.live.slots import UNKNOWN_OWNER, SlotMap
from kvtui.live.keys import stored_keys
from kvtui.live.lora import adapter_of
from kvtui.live.wire import AllBlocksCleared, Batch, BlockRemoved, BlockStored
from kvtui.sim.router.index import KVIndex

EVICTIONS_KEPT = 1_000_000
SERVED_KEPT = 10_000
HELD_MAX = 250_000  # blocks one engine may hold in kvtui's maps (all media, orphans with them)
ADAPTERS_MAX = 10_000  # LoRA adapter names kept from stored events
SILENT_AFTER_S = 10.0  # an engine that sent nothing this long after kvtui began watching is shown
# the index's tiers: every offloaded medium (vLLM's CPU and STORAGE, SGLang's CPU_PINNED, DISK
# and EXTERNAL) scores as CPU
TIER = {"GPU": "gpu", "CPU": "cpu", "STORAGE": "cpu", "CPU_PINNED": "cpu", "DISK": "cpu", "EXTERNAL": "cpu"}


@dataclass
class EngineCounts:
    """What one engine published, as received: blocks (not events) stored and removed."""

    batches: int = 0
    stored: int = 0
    removed: int = 0
    cleared: int = 0
    malformed: int = 0
    gaps: int = 0  # batches missed that replay could not fill
    replayed: int = 0  # batches replay did fill (counted in `batches` too)
    orphans: int = 0  # stored blocks not indexed: their parent hash was unknown
    unknown_removed: int = 0  # removed hashes that were not held
    epochs: int = 1  # a restart (the seq went back) or an AllBlocksCleared begins the next
    restarts: int = 0
    over_cap: int = 0  # held blocks let go, oldest first, past HELD_MAX (module docstring)
    adapters_over_cap: int = 0  # stored events whose adapter name was not kept past ADAPTERS_MAX
    malformed_by_kind: Counter = field(default_factory=Counter)  # Malformed.kind -> messages
    last_batch_at: float | None = None  # receive time of the last batch that decoded

    def bad(self, kind: str) -> None:
        self.malformed += 1
        self.malformed_by_kind[kind] += 1

    def line(self, name: str) -> str:
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(self.malformed_by_kind.items()))
        return (f"{name}: stored {self.stored} removed {self.removed} cleared {self.cleared} "
                f"batches {self.batches} gaps {self.gaps} malformed {self.malformed}"
                + (f" ({kinds})" if kinds else "")
                + (f" (replay filled {self.replayed})" if self.replayed else "")
                + (f" epochs {self.epochs} (restarts {self.restarts})" if self.epochs > 1 else "")
                + (f" over cap {self.over_cap} (oldest held blocks let go past {HELD_MAX:,})" if self.over_cap else "")
                + (f" adapters over cap {self.adapters_over_cap}" if self.adapters_over_cap else ""))


@dataclass
class EngineBlocks:
    """One engine's held blocks per medium: engine hash -> kvtui key."""

    by_medium: dict[str, dict] = field(default_factory=lambda: defaultdict(dict))
    gpu_cells: SlotMap = field(default_factory=SlotMap)  # where the block map draws them

    def held(self) -> int:
        """Blocks held in the maps: the GPU's cells (keyed or orphan) and every other medium's."""
        return len(self.gpu_cells.cells) + sum(len(b) for m, b in self.by_medium.items() if m != "GPU")

    def key_of(self, engine_hash) -> int | None:
        for blocks in self.by_medium.values():
            if engine_hash in blocks:
                return blocks[engine_hash]
        return None


class LiveState:
    """Every engine's blocks and counts, and the global index key -> {(engine, medium)}."""

    def __init__(self) -> None:
        self.counts: dict[str, EngineCounts] = {}
        self.blocks: dict[str, EngineBlocks] = {}
        self.index: dict[int, set[tuple[str, str]]] = defaultdict(set)
        self.figures: dict[str, EngineFigures] = {}  # each engine's last scrape of its /metrics
        self.fresh_at: dict[str, float] = {}  # when each engine's /metrics last read well
        self.watched_at: dict[str, float] = {}  # when each engine began to be watched
        self.evicted: dict[tuple[str, int], int] = {}  # (engine, key) -> seq of the batch that removed it
        self.kv_index = KVIndex()
        self.adapters: set[str] = set()  # LoRA adapters engines have stored blocks under
        self.served: deque = deque(maxlen=SERVED_KEPT)  # route mode's last requests (delivery.Served)
        # when a list: what each batch did, as kvtui/live/translate.py turns it into events
        # ("stored", engine, medium, keys, parent key, owner) / ("removed", engine, medium,
        # ((key, owner), ...)) / ("cleared", engine, keys held) / ("orphans", engine, blocks)
        self.changes: list[tuple] | None = None
        # when a set: (engine, medium, engine hash) of every keyed block stored or let go since
        # the last look, and (engine, None, None) when all of an engine's went (a clear, a
        # restart): what route mode writes to etcd (kvtui/live/etcd_keeper.py)
        self.touched: set[tuple] | None = None

    def engine(self, name: str) -> EngineCounts:
        if name not in self.counts:
            self.counts[name] = EngineCounts()
            self.blocks[name] = EngineBlocks()
        return self.counts[name]

    def apply(self, name: str, batch: Batch) -> None:
        self.engine(name).batches += 1
        for event in batch.events:
            match event:
                case BlockStored():
                    self._stored(name, event)
                case BlockRemoved():
                    self._removed(name, event, batch.seq)
                case AllBlocksCleared():
                    self._cleared(name)

    def _stored(self, name: str, e: BlockStored) -> None:
        counts, blocks = self.counts[name], self.blocks[name]
        counts.stored += len(e.block_hashes)
        adapter = adapter_of(e.lora_name, e.lora_id)
        if adapter is not None and adapter not in self.adapters:
            if len(self.adapters) < ADAPTERS_MAX:
                self.adapters.add(adapter)
            else:
                counts.adapters_over_cap += 1
        parent = None if e.parent_block_hash is None else blocks.key_of(e.parent_block_hash)
        if e.parent_block_hash is not None and parent is None:
            counts.orphans += len(e.block_hashes)
            self._place(blocks, e, UNKNOWN_OWNER)
            self._note("orphans", name, len(e.block_hashes))
            return self._cap(name)
        keys = stored_keys(e, parent)
        owner = _owner(blocks, e, keys[0]) if keys else UNKNOWN_OWNER
        if keys:
            self._place(blocks, e, owner)
        self._note("stored", name, e.medium, tuple(keys), parent, owner)
        for engine_hash, key in zip(e.block_hashes, keys):
            blocks.by_medium[e.medium][engine_hash] = key
            self.index[key].add((name, e.medium))
            if self.touched is not None:
                self.touched.add((name, e.medium, engine_hash))
        # a block with a parent never starts a prompt: position 1 stands for "after the first",
        # so a live session's index remembers first blocks only, not every key ever stored
        self.kv_index.add(name, keys, TIER[e.medium], 0 if e.parent_block_hash is None else 1)
        self._cap(name)
        self.kv_index.prune_firsts(2 * HELD_MAX * len(self.blocks))

    def _cap(self, name: str) -> None:
        """Past HELD_MAX held blocks, let the oldest go (the largest medium's first stored),
        down to a tenth under the cap, counting each: an engine that claims ever more blocks
        than it removes cannot grow kvtui's memory without bound. A tenth at once, because
        finding a dict's oldest entries walks past the ones deleted before them: one walk per
        tenth, not one per block."""
        blocks, counts = self.blocks[name], self.counts[name]
        if blocks.held() <= HELD_MAX:
            return
        over = blocks.held() - (HELD_MAX - HELD_MAX // 10)
        counts.over_cap += over
        while over > 0:
            gpu = len(blocks.gpu_cells.cells)
            medium = max({"GPU", *blocks.by_medium}, key=lambda m: gpu if m == "GPU" else len(blocks.by_medium[m]))
            held = blocks.gpu_cells.cells if medium == "GPU" else blocks.by_medium[medium]
            oldest = list(islice(held, over))
            self._let_oldest_go(name, medium, oldest)
            over -= len(oldest)

    def _let_oldest_go(self, name: str, medium: str, oldest: list) -> None:
        """Let the cap's `oldest` go, noted as removed (so the run's events, and the picture
        drawn from them, lose them too); a keyless orphan cell is only counted."""
        gone = []
        for engine_hash in oldest:
            owner = self.blocks[name].gpu_cells.owner_of(engine_hash) if medium == "GPU" else None
            key = self._let_go(name, medium, engine_hash)
            if key is not None:
                gone.append((key, owner or UNKNOWN_OWNER))
        self._note("removed", name, medium, tuple(gone))

    @staticmethod
    def _place(blocks: EngineBlocks, e: BlockStored, owner: str) -> None:
        if e.medium == "GPU":
            for engine_hash in e.block_hashes:
                blocks.gpu_cells.place(engine_hash, owner)

    def _removed(self, name: str, e: BlockRemoved, seq: int) -> None:
        counts = self.counts[name]
        counts.removed += len(e.block_hashes)
        gone = []
        for engine_hash in e.block_hashes:
            owner = self.blocks[name].gpu_cells.owner_of(engine_hash) if e.medium == "GPU" else None
            key = self._let_go(name, e.medium, engine_hash)
            if key is None:
                counts.unknown_removed += 1
            else:
                self._remember_eviction(name, key, seq)
                gone.append((key, owner or UNKNOWN_OWNER))
        self._note("removed", name, e.medium, tuple(gone))

    def _let_go(self, name: str, medium: str, engine_hash) -> int | None:
        """`engine_hash` no longer held by `name` on `medium`; its key, if it was keyed."""
        if medium == "GPU":
            self.blocks[name].gpu_cells.free(engine_hash)
        key = self.blocks[name].by_medium[medium].pop(engine_hash, None)
        if key is not None:
            self._unindex(key, (name, medium))
            self.kv_index.remove(name, (key,), TIER[medium])
            if self.touched is not None:
                self.touched.add((name, medium, engine_hash))
        return key

    def restarted(self, name: str) -> None:
        """The engine restarted: a new epoch, and its blocks are gone with the old process."""
        self.counts[name].restarts += 1
        self._forget(name)

    def scraped(self, name: str, at: float, figures: EngineFigures) -> None:
        self.figures[name] = figures
        if figures.error is None:
            self.fresh_at[name] = at

    def _cleared(self, name: str) -> None:
        self.counts[name].cleared += 1
        self._forget(name)

    def _forget(self, name: str) -> None:
        """Every block of `name` gone (an AllBlocksCleared, a restart): a new epoch."""
        self.counts[name].epochs += 1
        self._note("cleared", name, sum(len(held) for held in self.blocks[name].by_medium.values()))
        for medium, held in self.blocks[name].by_medium.items():
            for key in held.values():
                self._unindex(key, (name, medium))
            held.clear()
        self.blocks[name].gpu_cells.clear()
        self.kv_index.clear(name)
        if self.touched is not None:
            self.touched.add((name, None, None))

    def _note(self, *change) -> None:
        if self.changes is not None:
            self.changes.append(change)

    def _remember_eviction(self, name: str, key: int, seq: int) -> None:
        """Which batch removed `key` from `name` last (miss forensics: evicted on the chosen
        engine), the most recent EVICTIONS_KEPT of them."""
        self.evicted.pop((name, key), None)
        self.evicted[(name, key)] = seq
        if len(self.evicted) > EVICTIONS_KEPT:
            del self.evicted[next(iter(self.evicted))]

    def _unindex(self, key: int, holder: tuple[str, str]) -> None:
        holders = self.index.get(key)
        if holders is not None:
            holders.discard(holder)
            if not holders:
                del self.index[key]

    def answered(self, name: str) -> bool:
        """Did `name` ever send a message (a batch, or one that did not decode)?"""
        counts = self.counts[name]
        return counts.batches > 0 or counts.malformed > 0

    def silent(self, now: float, after: float = SILENT_AFTER_S) -> list[str]:
        """A line for every engine watched `after` seconds or more that never sent a batch:
        the quiet failure of a wrong endpoint (ZMQ connects to anything, and waits)."""
        return [f"no batch from {name} in {now - since:.0f} s: is the address the engine's "
                "`--kv-events-config` endpoint?"
                for name, since in self.watched_at.items() if now - since >= after and not self.answered(name)]

    def held(self, name: str, medium: str = "GPU") -> int:
        """Blocks `name` holds on `medium` now."""
        return len(self.blocks[name].by_medium.get(medium, {}))


def _owner(blocks: EngineBlocks, e: BlockStored, first_key: int) -> str:
    """The prefix a stored run of blocks belongs to: its parent's, or its own first key's."""
    if e.parent_block_hash is not None:
        return blocks.gpu_cells.owner_of(e.parent_block_hash) or UNKNOWN_OWNER
    return f"{first_key & 0xFFFFFF:06x}"
