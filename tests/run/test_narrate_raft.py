"""A replicated control plane's events in words: the Why texts carry the drawn timeout and its
range, the voter's reason with both logs' tails, and how far behind a stale read was."""

from __future__ import annotations

from kvtui.events import MetadataElection, MetadataStaleRead, MetadataVote
from kvtui.run.facts import NoFacts
from kvtui.run.narrate import explain, summary


def test_an_election_says_its_timeout_and_where_it_was_drawn_from():
    ev = MetadataElection(7, 3.0, member="m1", term=4, pre_vote=False, timeout_s=1.37, lo_s=1.0, hi_s=2.0,
                          last_term=3, last_index=1184)
    assert summary(ev) == "m1 timed out (1.37 s, drawn from [1, 2]); asks for votes, term 4"
    assert "index 1184" in explain(ev, NoFacts(), None)
    pre = MetadataElection(8, 3.0, member="m1", term=4, pre_vote=True, timeout_s=1.37, lo_s=1.0, hi_s=2.0,
                           last_term=3, last_index=1184)
    assert "without raising its own term" in explain(pre, NoFacts(), None)


def test_a_vote_and_a_stale_read_give_their_reasons():
    vote = MetadataVote(9, 3.1, voter="m3", candidate="m1", term=4, granted=True, pre_vote=False,
                        reason="its log (term 3, index 1184) is at least as up to date as mine (term 3, index 1180)")
    assert summary(vote).startswith("m3 votes m1: its log (term 3, index 1184) is at least as up to date")
    read = MetadataStaleRead(10, 3.2, member="m3", session="s-1", node="node-b", behind=57, stale_blocks=4,
                             stale="index said 12 blocks cached on node-b, it holds 8")
    text = explain(read, NoFacts(), None)
    assert "read m3 (serializable), 57 entries behind" in text and "it holds 8" in text
