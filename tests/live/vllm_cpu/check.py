"""run.sh's verdict, with no kvtui code: did the forced gap happen, did replay fill it, do
kvtui's per-engine counts equal the raw subscriber's, do the forensics causes add up in total,
and does the recording replay to the same lines.

    check.py KVTUI_OUT RAW_OUT FORWARDER_OUT REPLAY_OUT     exit 0 when all hold, 1 otherwise

REPLAY_OUT is `kvtui replay RECORDING --no-ui`: it must print what the live session printed.
"""
import re
import sys

kvtui, raw, forwarder, replay = (open(p).read() for p in sys.argv[1:5])
problems = [] if replay == kvtui else ["kvtui replay printed other lines than the live session"]
dropped = int(re.search(r"\((\d+) batches\)", forwarder).group(1))
if dropped == 0:
    problems.append("the forwarder dropped no batch: no gap was forced")
engines = re.findall(r"^(\S+): stored (\d+) removed (\d+) cleared \d+ batches (\d+) gaps (\d+)", kvtui, re.M)
if len(engines) != len(re.findall(r"^\S+: raw stored", raw, re.M)) or not engines:
    problems.append(f"kvtui printed {len(engines)} engine lines, the raw subscriber a different number")
for name, stored, removed, batches, gaps in engines:
    want = re.search(rf"^{re.escape(name)}: raw stored (\d+) removed (\d+) batches (\d+)", raw, re.M).groups()
    if (stored, removed, batches) != want:
        problems.append(f"{name}: kvtui stored/removed/batches {stored}/{removed}/{batches}, raw {'/'.join(want)}")
    if gaps != "0":
        problems.append(f"{name}: {gaps} batches lost (replay did not fill them)")
missed = int(re.search(r"missed (\d+)", kvtui).group(1))
causes = sum(int(n) for n in re.findall(r"^  \S.*?\s(\d+)$", kvtui, re.M))
if causes != missed:
    problems.append(f"forensics: causes add to {causes}, missed {missed}")
print("\n".join(problems) or f"check: {dropped} batches dropped mid-run, all filled by replay; "
      f"counts equal the raw subscriber's; causes add to the {missed} missed blocks")
sys.exit(1 if problems else 0)
