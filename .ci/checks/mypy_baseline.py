"""mypy's errors on kvtui/ against a committed baseline that may only shrink.

    python .ci/checks/mypy_baseline.py            # check (what .ci/checks/mypy.sh runs)
    python .ci/checks/mypy_baseline.py --write    # record today's errors as the new baseline

The baseline (.ci/checks/mypy-baseline.txt) holds one line per file and error code with its
count. The check fails when the total, or the count of any error code, grows: a new error
anywhere fails CI, even one that lands in a file that was just moved (files move; the kinds
of error the project carries should not grow). The files whose counts grew are named to help.
It also fails when the errors shrank and the baseline was not rewritten, so the ratchet
clicks: fixed errors cannot quietly come back later.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / ".ci/checks/mypy-baseline.txt"
ERROR = re.compile(r"^(?P<file>[^:]+):\d+: error: .*\[(?P<code>[a-z-]+)\]$")


def current_errors() -> Counter[tuple[str, str]]:
    """(file, error code) -> count, from one mypy run with pyproject's [tool.mypy]."""
    mypy = [sys.executable, "-m", "mypy", "--no-error-summary", "--no-pretty"]
    out = subprocess.run(mypy, cwd=ROOT, capture_output=True, text=True).stdout
    found = (ERROR.match(line) for line in out.splitlines())
    return Counter((m["file"], m["code"]) for m in found if m)


def read_baseline() -> Counter[tuple[str, str]]:
    rows = (line.split() for line in BASELINE.read_text().splitlines() if not line.startswith("#"))
    return Counter({(f, code): int(n) for f, code, n in rows})


def write_baseline(errors: Counter[tuple[str, str]]) -> None:
    head = f"# mypy errors on kvtui/ (file, code, count): {sum(errors.values())} in all\n"
    rows = (f"{f} {code} {n}\n" for (f, code), n in sorted(errors.items()))
    BASELINE.write_text(head + "".join(rows))


def _sum_codes(errors: Counter[tuple[str, str]]) -> Counter[str]:
    totals: Counter[str] = Counter()
    for (_, code), n in errors.items():
        totals[code] += n
    return totals


def grown(now: Counter[tuple[str, str]], base: Counter[tuple[str, str]]) -> list[str]:
    """Lines that say what grew: error codes (the failure) and files (the hint)."""
    codes = _sum_codes(now) - _sum_codes(base)
    files = now - base
    return [f"  {code}: +{n}" for code, n in sorted(codes.items())] + (
        ["  where the counts grew:"] + [f"    {f} [{code}] +{n}" for (f, code), n in sorted(files.items())]
        if codes else []
    )


def check() -> int:
    now, base = current_errors(), read_baseline()
    total, was = sum(now.values()), sum(base.values())
    if growth := grown(now, base):
        print(f"mypy: {total} errors, baseline {was}; new errors:", *growth, sep="\n")
        return 1
    if total < was:
        print(f"mypy: {total} errors, fewer than the baseline's {was}: record the new baseline with\n"
              f"  python .ci/checks/mypy_baseline.py --write   (and commit it)")
        return 1
    print(f"mypy: {total} errors, as in the baseline")
    return 0


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        write_baseline(now := current_errors())
        print(f"mypy baseline: {sum(now.values())} errors written to {BASELINE.relative_to(ROOT)}")
        return 0
    return check()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
