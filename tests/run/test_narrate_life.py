"""The life screen's lines count blocks in words that agree with the number (1 block, 2 blocks)."""

from kvtui.events import BlocksEvicted, BlocksStored, RequestArrived, RequestPreempted
from kvtui.run.narrate import life_lines


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
