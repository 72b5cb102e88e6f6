"""The writer process of test_wal_sigkill: recover, then append and acknowledge until killed.

    python sigkill_writer.py DIR SEED CYCLE POLICY [BATCHES]

Prints `OPEN <last seq> <digest> <json report>` once recovered, then `ACK <batch> <seq>` after
every flush returns (the acknowledgement) — forever, or for BATCHES batches and then `DONE`.
"""

import json
import sys

from kvtui.store import MetadataStore
from storetest_support import cycle_batches, do


def main() -> None:
    directory, seed, cycle, policy = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    limit = int(sys.argv[5]) if len(sys.argv) > 5 else None
    store = MetadataStore.open(directory, fsync=policy, snapshot_every=150, segment_bytes=8192,
                               batch_records=1 << 20)
    rep = store.last_report
    info = {"damage": [d.kind for d in rep.damage], "suspected": rep.suspected_corruption,
            "snapshot": rep.snapshot_used, "temp": rep.temp_files_removed}
    print(f"OPEN {store.acked_seq} {store.digest()} {json.dumps(info)}", flush=True)
    for i, batch in enumerate(cycle_batches(seed, cycle)):
        if i == limit:
            break
        for op in batch:
            do(store, op)
        seq = store.flush()
        print(f"ACK {i} {seq}", flush=True)
    store.close()
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
