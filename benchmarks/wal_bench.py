"""The metadata WAL against SQLite, side by side in the same run, on the same disk.

Run:  python benchmarks/wal_bench.py [--quick] [--dir DIR]

Baseline: Python's sqlite3 in WAL mode, one table `log(seq INTEGER PRIMARY KEY, payload BLOB)`,
the same record sizes and batch sizes, the same process. Ratios are kvtui / sqlite throughput
(> 1: kvtui is faster). Comparisons are at *equal durability*:

  power loss, per batch    kvtui fsync=batch (one write + fdatasync per batch)
                           vs sqlite synchronous=FULL, one transaction per batch
  power loss, per record   kvtui fsync=always vs sqlite FULL, one transaction per record
  process kill, per batch  kvtui fsync=never (one write per batch, no fsync)
                           vs sqlite synchronous=NORMAL (WAL synced only at checkpoints)
  (kvtui batch vs sqlite NORMAL is also shown, as the issue suggests, but there kvtui gives
   the stronger guarantee: NORMAL may lose committed transactions on power loss.)

Sections:
1. append throughput per fsync policy (records of 64 bytes; batches of 1, 10, 100, 1000);
2. replay: open + recover a log of 10k / 100k / 1M records written in batches of 1000
   (1M not with --quick), every record handed to the same consumer function — kvtui's Log
   (checksum + sequence check of every frame, i.e. batch) vs SELECT of every row in seq order
   (SQLite checks no checksums);
3. the metadata store: µs per op on an engine-like op mix (fsync=batch), and recovery of
   the same ops from kvtui's log vs from SQLite rows holding the same op encoding, both
   applying through the same code;
4. recovery with a snapshot for histories of growing length: cost stays flat.

Timings are wall-clock best-of-N on a warm page cache; fsync costs are this machine's disk.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvtui.store import Log, MetadataStore  # noqa: E402
from kvtui.store import ops as o  # noqa: E402
from kvtui.store.state import MetaState  # noqa: E402

RECORD = 64


def payloads(n: int, size: int = RECORD) -> list[bytes]:
    rng = random.Random(n)
    pool = [rng.randbytes(size) for _ in range(1024)]
    return [pool[i % 1024] for i in range(n)]


def best(fn, repeat: int) -> float:
    return min(fn() for _ in range(repeat))


class Dirs:
    def __init__(self, base: str | None):
        self.base = tempfile.mkdtemp(prefix="kvtui-walbench-", dir=base)
        self.n = 0

    def new(self, name: str) -> str:
        self.n += 1
        return os.path.join(self.base, f"{self.n:03d}-{name}")

    def cleanup(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


# -- 1. appends ------------------------------------------------------------------------------


def kv_append(d: str, policy: str, recs: list[bytes], batch: int) -> float:
    log = Log.open(d, fsync=policy, batch_frames=1 << 30)
    t0 = time.perf_counter()
    add, flush = log.add, log.flush
    for i in range(0, len(recs), batch):
        for r in recs[i:i + batch]:
            add(r)
        flush()
    dt = time.perf_counter() - t0
    log.close()
    return dt


def sq_open(path: str, sync: str) -> sqlite3.Connection:
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute(f"PRAGMA synchronous={sync}")
    con.execute("CREATE TABLE IF NOT EXISTS log(seq INTEGER PRIMARY KEY, payload BLOB)")
    return con


def sq_append(path: str, sync: str, recs: list[bytes], batch: int) -> float:
    con = sq_open(path, sync)
    t0 = time.perf_counter()
    seq = 0
    for i in range(0, len(recs), batch):
        chunk = recs[i:i + batch]
        con.execute("BEGIN")
        con.executemany("INSERT INTO log VALUES (?, ?)",
                        ((seq + j + 1, r) for j, r in enumerate(chunk)))
        con.execute("COMMIT")
        seq += len(chunk)
    dt = time.perf_counter() - t0
    con.close()
    return dt


def section_appends(dirs: Dirs, quick: bool) -> list[tuple]:
    rows = []
    budget = 600 if quick else 2000  # batches per measurement (fsync-bound rows)
    for batch in (1, 10, 100, 1000):
        n = max(batch * min(budget, 20_000 // batch if quick else 100_000 // batch), batch)
        n = min(n, 20_000 if quick else 100_000)
        recs = payloads(n)
        pairs = [("power loss / batch", "batch", "FULL"),
                 ("process kill / batch", "never", "NORMAL"),
                 ("kvtui batch vs NORMAL*", "batch", "NORMAL")]
        if batch == 1:
            pairs.insert(1, ("power loss / record", "always", "FULL"))
        for label, pol, sync in pairs:
            k = best(lambda: kv_append(dirs.new("a"), pol, recs, batch), 2)
            s = best(lambda: sq_append(dirs.new("a.db"), sync, recs, batch), 2)
            rows.append((label, batch, f"kvtui {pol}", f"sqlite {sync}", n / k, n / s))
    return rows


# -- 2. replay -------------------------------------------------------------------------------


def build_kv(d: str, n: int, batch: int = 1000) -> None:
    recs = payloads(n)
    log = Log.open(d, fsync="never", batch_frames=1 << 30)
    for i in range(0, n, batch):
        for r in recs[i:i + batch]:
            log.add(r)
        log.flush()
    log.close()


def build_sq(path: str, n: int, batch: int = 1000) -> None:
    sq_append(path, "OFF", payloads(n), batch)


class Consumer:
    """What the application does with each replayed record — the same for both sides."""

    def __init__(self):
        self.count = 0
        self.size = 0

    def __call__(self, seq, payload) -> None:
        self.count += 1
        self.size += len(payload)


def kv_replay(d: str) -> tuple[float, int]:
    c = Consumer()
    t0 = time.perf_counter()
    log = Log.open(d, apply_record=c)
    dt = time.perf_counter() - t0
    log.close()
    return dt, c.count


def sq_replay(path: str) -> tuple[float, int]:
    c = Consumer()
    t0 = time.perf_counter()
    con = sqlite3.connect(path)
    for seq, payload in con.execute("SELECT seq, payload FROM log ORDER BY seq"):
        c(seq, payload)
    dt = time.perf_counter() - t0
    con.close()
    return dt, c.count


def section_replay(dirs: Dirs, quick: bool) -> list[tuple]:
    rows = []
    for n in (10_000, 100_000) + (() if quick else (1_000_000,)):
        d, p = dirs.new("r"), dirs.new("r.db")
        build_kv(d, n)
        build_sq(p, n)
        rep = 3 if n < 1_000_000 else 2
        k, kc = min(kv_replay(d) for _ in range(rep))
        s, sc = min(sq_replay(p) for _ in range(rep))
        assert kc == sc == n, (kc, sc, n)
        rows.append((n, n / k, n / s))
    return rows


# -- 3. the metadata store -------------------------------------------------------------------


def op_mix(n: int, seed: int = 1, keyspace: int = 50_000):
    """Engine-like ops: mostly stored/evicted of 1-16 chained keys, some routes."""
    rng = random.Random(seed)
    nodes = [f"node-{i}" for i in range(8)]
    keys = [rng.getrandbits(64) for _ in range(keyspace)]
    out = []
    for _ in range(n):
        r = rng.random()
        node = rng.choice(nodes)
        if r < 0.55:
            i = rng.randrange(keyspace - 16)
            out.append((0, node, tuple(keys[i:i + rng.randint(1, 16)]), f"g{i % 40}"))
        elif r < 0.95:
            i = rng.randrange(keyspace - 16)
            out.append((1, node, tuple(keys[i:i + rng.randint(1, 8)])))
        else:
            out.append((2, f"s{rng.randrange(5000)}", node))
    return nodes, out


def run_ops(store: MetadataStore, nodes, ops) -> None:
    for nd in nodes:
        store.register_node(nd, 4096)
    stored, evicted, route = store.blocks_stored, store.blocks_evicted, store.route_session
    for op in ops:
        if op[0] == 0:
            stored(op[1], op[2], op[3])
        elif op[0] == 1:
            evicted(op[1], op[2])
        else:
            route(op[1], op[2])
    store.flush()


def encode_ops_like_store(nodes, ops) -> list[bytes]:
    """Each op as its own record, in the store's encoding (DEFINEs kept with first use)."""
    st = MetaState()
    recs = []

    def intern(kind, name, buf):
        i = st.ids[kind].get(name)
        if i is None:
            i = len(st.names[kind])
            b = name.encode()
            buf += o.S_DEFINE.pack(o.DEFINE, kind, i, len(b)) + b
            st.define(kind, i, name)
        return i

    for nd in nodes:
        buf = bytearray()
        nid = intern(o.NODE, nd, buf)
        buf += o.S_REGISTER.pack(o.NODE_REGISTER, nid, 4096)
        recs.append(bytes(buf))
    for op in ops:
        buf = bytearray()
        if op[0] == 0:
            nid, gid = intern(o.NODE, op[1], buf), intern(o.GROUP, op[3], buf)
            buf += o.S_STORED.pack(o.BLOCKS_STORED, nid, gid, len(op[2])) + o.pack_keys(op[2])
        elif op[0] == 1:
            nid = intern(o.NODE, op[1], buf)
            buf += o.S_EVICTED.pack(o.BLOCKS_EVICTED, nid, len(op[2])) + o.pack_keys(op[2])
        else:
            sid, nid = intern(o.SESSION, op[1], buf), intern(o.NODE, op[2], buf)
            buf += o.S_ROUTE.pack(o.SESSION_ROUTE, sid, nid)
        recs.append(bytes(buf))
    return recs


def section_store(dirs: Dirs, quick: bool) -> dict:
    out = {}
    n = 100_000 if quick else 300_000
    nodes, ops = op_mix(n)
    per_op = []
    for policy in ("batch", "never", "always"):
        m = n if policy != "always" else 2000
        d = dirs.new(f"s-{policy}")
        s = MetadataStore.open(d, fsync=policy, snapshot_every=0)
        t0 = time.perf_counter()
        run_ops(s, nodes, ops[:m])
        dt = time.perf_counter() - t0
        stats = s.wal_stats()
        s.close()
        per_op.append((policy, m, dt / m * 1e6, stats["bytes"] / m))
    out["per_op"] = per_op
    # recovery of the same ops: kvtui log vs sqlite rows holding the same encoded ops
    rec_rows = []
    for m in (10_000, 100_000) + (() if quick else (1_000_000,)):
        nodes_m, ops_m = op_mix(m, seed=2)
        d = dirs.new("s-rec")
        s = MetadataStore.open(d, fsync="never", snapshot_every=0)
        run_ops(s, nodes_m, ops_m)
        digest = s.digest()
        s.close()
        p = dirs.new("s-rec.db")
        sq_append(p, "OFF", encode_ops_like_store(nodes_m, ops_m), 1000)

        def kv() -> float:
            t0 = time.perf_counter()
            s = MetadataStore.open(d)
            dt = time.perf_counter() - t0
            assert s.last_report.records_replayed == m + len(nodes_m)
            s.close()
            return dt

        def sq() -> float:
            t0 = time.perf_counter()
            con = sqlite3.connect(p)
            st = MetaState()
            apply = st.apply_payload
            for (payload,) in con.execute("SELECT payload FROM log ORDER BY seq"):
                apply(payload)
            dt = time.perf_counter() - t0
            con.close()
            from kvtui.store.state import digest_of
            assert digest_of(st.plain()) == digest
            return dt

        rep = 3 if m < 1_000_000 else 1
        rec_rows.append((m, (m + len(nodes_m)) / best(kv, rep), (m + len(nodes_m)) / best(sq, rep)))
    out["recovery"] = rec_rows
    return out


# -- 4. snapshots ----------------------------------------------------------------------------


def section_snapshot(dirs: Dirs, quick: bool) -> list[tuple]:
    rows = []
    for n in (10_000, 100_000) + (() if quick else (1_000_000,)):
        nodes, ops = op_mix(n, seed=3, keyspace=5_000)  # bounded state, growing history
        d, plain = dirs.new("snap"), dirs.new("nosnap")
        for path, every in ((d, 10_000), (plain, 0)):
            s = MetadataStore.open(path, fsync="never", snapshot_every=every)
            run_ops(s, nodes, ops)
            s.close()
        t = best(lambda: _timed_open(d), 3)
        t_plain = best(lambda: _timed_open(plain), 3 if n < 1_000_000 else 1)
        s = MetadataStore.open(d)
        rep = s.last_report
        entries = len(s.state()["entries"])
        s.close()
        segs = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
                   if f.startswith("wal-"))
        rows.append((n, t * 1000, rep.records_replayed, entries, segs, t_plain * 1000))
    return rows


def _timed_open(d: str) -> float:
    t0 = time.perf_counter()
    s = MetadataStore.open(d)
    dt = time.perf_counter() - t0
    s.close()
    return dt


# -- output ----------------------------------------------------------------------------------


def fmt_rate(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:6.2f} M/s"
    if x >= 1e3:
        return f"{x / 1e3:6.1f} k/s"
    return f"{x:6.0f}  /s"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, no 1M rows")
    ap.add_argument("--dir", default=None, help="where to put the logs (default: $TMPDIR)")
    args = ap.parse_args(argv)
    dirs = Dirs(args.dir)
    print(f"kvtui WAL vs sqlite3 {sqlite3.sqlite_version} (WAL mode); records of {RECORD} bytes; "
          f"dir {dirs.base}")
    try:
        t0 = time.perf_counter()
        print("\n1. Appends (records/s; ratio = kvtui / sqlite, > 1 means kvtui is faster)")
        print(f"  {'durability':<24} {'batch':>5}  {'kvtui':<14} {'':>11}  {'sqlite':<14}"
              f" {'':>11}  {'ratio':>6}")
        for label, batch, kl, sl, k, s in section_appends(dirs, args.quick):
            print(f"  {label:<24} {batch:>5}  {kl:<14} {fmt_rate(k):>11}  {sl:<14} "
                  f"{fmt_rate(s):>11}  {k / s:6.2f}")
        print("  * unequal durability: sqlite NORMAL may lose committed transactions on power "
              "loss, kvtui batch does not.")

        print("\n2. Replay: open + read back every record, verified (records/s)")
        print(f"  {'records':>9}  {'kvtui Log.open':>15}  {'sqlite SELECT':>14}  {'ratio':>6}")
        for n, k, s in section_replay(dirs, args.quick):
            print(f"  {n:>9}  {fmt_rate(k):>15}  {fmt_rate(s):>14}  {k / s:6.2f}")

        st = section_store(dirs, args.quick)
        print("\n3. MetadataStore on an engine-like op mix (55% stored 1-16 keys, 40% evicted "
              "1-8 keys, 5% routes)")
        for policy, m, us, b in st["per_op"]:
            print(f"  fsync={policy:<7} {m:>7} ops  {us:6.2f} µs/op  {b:5.1f} log bytes/op")
        print("  recovery (decode + apply every op, records/s): kvtui log vs the same ops as "
              "sqlite rows + the same apply")
        print(f"  {'ops':>9}  {'kvtui':>12}  {'sqlite':>12}  {'ratio':>6}")
        for m, k, s in st["recovery"]:
            print(f"  {m:>9}  {fmt_rate(k):>12}  {fmt_rate(s):>12}  {k / s:6.2f}")

        print("\n4. Recovery with snapshots (snapshot_every=10k ops, 5k-key working set)")
        print(f"  {'history':>9}  {'recover ms':>10}  {'ops replayed':>12}  {'entries':>8}"
              f"  {'log bytes kept':>14}  {'without snapshots':>17}")
        for n, ms, replayed, entries, segs, plain in section_snapshot(dirs, args.quick):
            print(f"  {n:>9}  {ms:>10.1f}  {replayed:>12}  {entries:>8}  {segs:>14}"
                  f"  {plain:>14.1f} ms")
        print(f"\ntotal {time.perf_counter() - t0:.1f} s")
    finally:
        dirs.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
