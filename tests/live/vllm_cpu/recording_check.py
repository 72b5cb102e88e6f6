"""run.sh's look inside kvtui's recording of the forced-gap run: when the dropped batches
arrived, and whether every request's forensics causes add up to its missed blocks.

    recording_check.py RECORDING ENGINE GAP_FIRST GAP_N     exit 0 when all hold, 1 otherwise

The dropped seqs never reached kvtui's socket, so they can only come from the engine's replay
socket, answered when the batch after the window exposed the gap: they must be received in
the same breath as seq GAP_FIRST+GAP_N, and after the first routed request (mid-run, not the
start-of-session catch-up). Uses kvtui's own reader of its own recording.
"""
import sys

from kvtui.live.delivery import Received, Served
from kvtui.live.recording import read_recording

SAME_BREATH_S = 0.1  # a replay answer is delivered just before the batch that exposed the gap

path, engine, first, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
deliveries = read_recording(path)
start = deliveries[0].at
seen = {int.from_bytes(d.frames[1], "big"): d.at - start
        for d in deliveries if isinstance(d, Received) and d.engine == engine}
served = [d for d in deliveries if isinstance(d, Served)]
problems = []
exposer = seen.get(first + n)
window = [seen.get(s) for s in range(first, first + n)]
if exposer is None or None in window:
    problems.append(f"{engine}: seqs {first}..{first + n} not all in the recording")
else:
    print(f"{engine}: seqs " + ", ".join(f"{s} at {seen[s]:.3f} s" for s in range(first - 1, first + n + 2) if s in seen))
    if any(exposer - t > SAME_BREATH_S or t > exposer for t in window):
        problems.append(f"{engine}: the dropped seqs did not arrive with seq {first + n}")
    if not served or served[0].at - start > min(window):
        problems.append(f"{engine}: the gap was filled before any request was routed")
    else:
        print(f"first request routed at {served[0].at - start:.3f} s")
unbalanced = [d for d in served if d.forensics and sum(c for _, c in d.forensics.causes) != d.forensics.missed]
print(f"{len(served)} requests, {len(unbalanced)} whose causes do not add up to their missed blocks")
if unbalanced or not served:
    problems.append("forensics: causes do not add up for every request")
print("\n".join(problems) or "recording: the gap was filled by replay mid-run")
sys.exit(1 if problems else 0)
