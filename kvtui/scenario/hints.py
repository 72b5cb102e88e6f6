"""What an error line says about a name it does not know: the nearest known one, and a long
list of known ones cut short. Its own module because the schema, the loader and the policy
table (kvtui/scenario/policies.py, which the schema imports) all say it."""

from __future__ import annotations

import difflib
import typing


def suggestion(word: str, candidates: typing.Iterable[str]) -> str:
    """`; did you mean 'x'?` when a candidate is close to `word`, else ``.

    A candidate that `word` abbreviates wins (`h100` -> `h100-80gb`, not the closer `h200`).
    """
    candidates = list(candidates)
    extending = [c for c in candidates if word and c.startswith(word)]
    close = difflib.get_close_matches(word, extending or candidates, n=1, cutoff=0.0 if extending else 0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def listing(names: typing.Sequence[str], most: int = 8) -> str:
    """`a, b, c`, or for a long list its first names, `…`, the last and the count: a 64-node
    cluster's names on every error line hid the line's point."""
    if len(names) <= most:
        return ", ".join(names)
    return f"{', '.join(names[:most - 1])}, …, {names[-1]} ({len(names)} in all)"
