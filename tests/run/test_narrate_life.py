"""The life screen's lines and the Why count in words that agree with the number (1 block,
2 blocks), and read as sentences."""

from kvtui.events import BlocksEvicted, BlocksStored, RequestArrived, RequestCompleted, RequestPreempted
from kvtui.run.narrate import explain, life_lines, summary


def _life(n: int) -> tuple:
    keys = tuple(range(n))
    return (
        RequestArrived(seq=1, t=0.0, request="req-1", group="chat", session="s-1", turn=1,
                       prompt_tokens=32, output_tokens=4),
        BlocksStored(seq=2, t=0.1, node="node-a", request="req-1", group="chat", keys=keys,
                     parent_key=None, first_index=0),
        BlocksEvicted(seq=3, t=0.1, node="node-a", keys=keys, groups=("code",) * n, for_request="req-1"),
        RequestPreempted(seq=4, t=0.2, request="req-1", node="node-a", freed_blocks=n, tokens_done=16,
                         needed_by="req-2"),
    )


def test_one_block_is_singular():
    text = "\n".join(life_lines("req-1", _life(1)))
    assert "stored 1 full block on" in text
    assert "for room: 1 block on" in text
    assert "1 block freed" in text
    assert "1 blocks" not in text


def test_several_blocks_are_plural():
    text = "\n".join(life_lines("req-1", _life(3)))
    assert "stored 3 full blocks on" in text
    assert "for room: 3 blocks on" in text
    assert "3 blocks freed" in text


def test_one_event_is_singular():
    arrived = _life(1)[:1]
    assert life_lines("req-1", arrived)[0] == "req-1: 1 event so far"


def test_a_request_preempting_itself_says_itself():
    """The log read "PREEMPT node-a: req-169 (28 blocks freed) for req-169"."""
    ev = RequestPreempted(seq=4, t=0.2, request="req-1", node="node-a", freed_blocks=2, tokens_done=16,
                          needed_by="req-1")
    assert summary(ev).endswith("for itself")
    assert "preempted on node-a for itself:" in "\n".join(life_lines("req-1", _life(1)[:1] + (ev,)))


def _completed(hit: str, cached: int, preemptions: int = 0) -> RequestCompleted:
    return RequestCompleted(seq=9, t=2.0, request="req-1", node="node-a", session="s-1", group="chat",
                            prompt_tokens=817, output_tokens=20, cached_tokens=cached, hit=hit,
                            ttft=0.1, tpot=0.01, e2e=0.3, preemptions=preemptions)


def test_a_miss_reads_as_words():
    """The life said "completed on decode-a: miss hit, 0 cached tokens"; the Why began a
    sentence in lower case ("... 2,336 ms. none of its 817 prompt tokens ...")."""
    ev = _completed("miss", 0)
    assert "completed on node-a: a miss, 0 cached tokens," in life_lines("req-1", (ev,))[1]
    assert ". None of its 817 prompt tokens came from cache (miss)." in explain(ev)
    assert "completed on node-a: prefix hit, 1 cached token," in life_lines("req-1", (_completed("prefix", 1),))[1]


def test_preemption_count_is_in_words():
    assert "It was preempted 1 time." in explain(_completed("prefix", 16, preemptions=1))
    assert "It was preempted 3 times." in explain(_completed("prefix", 16, preemptions=3))


def test_one_stored_block_is_not_a_range():
    """The Why read "blocks 759-759 of its sequence"."""
    one = BlocksStored(seq=2, t=0.1, node="n42", request="req-340", group="chat", keys=(5,), parent_key=None,
                       first_index=759)
    assert "(group chat, block 759 of its sequence)" in explain(one)
    assert "blocks 0-2 of its sequence" in explain(_life(3)[1])
