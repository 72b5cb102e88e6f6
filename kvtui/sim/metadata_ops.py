"""What one metadata command does to a store and to the router's KV index, in one place: the
single store (control_plane.py) applies a command as it happens, a replicated one
(replicated_control_plane.py) once the command is committed.

A command is a KV event (`BlocksStored`, `BlocksEvicted`, `NodeCacheCleared`), a node event
(`NodeDown`, `NodeUp`), or a tuple: ("session", session, node) or ("register", node, kv_blocks).
CPU-tier KV events reach the index only (control_plane.py's docstring: a routing hint, not
persisted)."""

from __future__ import annotations

from kvtui.events import BlocksEvicted, BlocksStored, NodeCacheCleared, NodeDown, NodeUp


def to_store(store, cmd) -> None:
    match cmd:
        case BlocksStored(medium="gpu"):
            store.blocks_stored(cmd.node, cmd.keys, cmd.group)
        case BlocksEvicted(medium="gpu"):
            store.blocks_evicted(cmd.node, cmd.keys)
        case NodeCacheCleared():
            store.node_cleared(cmd.node)
        case NodeDown():
            store.set_node_up(cmd.node, False)
        case NodeUp():
            store.set_node_up(cmd.node, True)
        case ("session", session, node):
            store.route_session(session, node)
        case ("register", node, kv_blocks):
            store.register_node(node, kv_blocks)


def to_index(index, cmd) -> None:
    match cmd:
        case BlocksStored():
            index.add(cmd.node, cmd.keys, cmd.medium)
        case BlocksEvicted():
            index.remove(cmd.node, cmd.keys, cmd.medium)
        case NodeCacheCleared():
            index.clear(cmd.node)
