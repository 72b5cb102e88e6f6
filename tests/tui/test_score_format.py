"""Every panel prints a routing decision's scores and margin the same way (QA: the Why panel
printed the margin at raw precision, "1.26729", beside the candidate table's "1.267")."""

import re

from kvtui.events import Candidate, RouteDecided
from kvtui.run.narrate import explain, life_lines
from kvtui.tui.widgets.candidates import candidate_rows, decision_line


def _decision() -> RouteDecided:
    cands = (
        Candidate("node-a", 2.26729, (("prefix", 0.41237), ("run", 3.0))),
        Candidate("node-b", 1.0, (("prefix", 0.0), ("run", 1200.0))),
    )
    return RouteDecided(seq=7, t=1.0, request="req-1", node="node-a", policy="cache_aware",
                        reason="best score", candidates=cands, prompt_blocks=4, session="s-1",
                        margin=1.26729)


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"\d[\d,]*\.\d+", text))


def test_the_margin_reads_the_same_in_why_table_and_life():
    ev = _decision()
    why, life, table = explain(ev), "\n".join(life_lines("req-1", (ev,))), decision_line(ev)
    for text in (why, life, table):
        assert "1.267" in text and "1.26729" not in text


def test_scores_and_features_read_the_same_in_the_table_and_the_life():
    ev = _decision()
    _, rows = candidate_rows(ev)
    table = " ".join(" ".join(r) for r in rows)
    life = "\n".join(line for line in life_lines("req-1", (ev,)) if line.startswith("└"))
    assert _numbers(life) == {"2.267", "0.412"} <= _numbers(table)
    assert "1,200" in table and "1,200" in life
