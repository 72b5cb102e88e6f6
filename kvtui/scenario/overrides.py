"""`--set dotted.key=value`: edit the raw YAML node tree before the loader builds it.

Overrides work on YAML nodes rather than on the built dataclasses so that an overridden value
goes through exactly the same type, range and cross-field checks as one written in the file.
Nodes that come from an override carry an `OverrideMark`, so a problem with them is reported
against `--set the.path` instead of a line of the file.

Paths are dotted keys; a number indexes a list (`cluster.nodes.0.kv_blocks`). The path is
checked against the dataclasses while it is walked, which is what lets an override create a
key (or a whole nested mapping) that the file leaves out.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

import yaml

from kvtui.scenario import safe_yaml
from kvtui.scenario.model import Dist, Scenario
from kvtui.scenario.schema import (
    field_types,
    is_dataclass_type,
    join_index,
    join_key,
    mapping_item,
    split_optional,
    to_plain,
    tuple_item,
    type_phrase,
    unknown_key_message,
)

Problem = tuple[str, "int | None", str]

STR_TAG = "tag:yaml.org,2002:str"
NULL_TAG = "tag:yaml.org,2002:null"
MAP_TAG = "tag:yaml.org,2002:map"
SEQ_TAG = "tag:yaml.org,2002:seq"
MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class OverrideMark:
    """Stands in for a yaml Mark on nodes made from `--set`: the source, and no line."""

    source: str
    line: None = None


class OverrideError(Exception):
    """One override cannot be applied; the message is shown against the override's source."""


def apply_overrides(root: yaml.Node, overrides: Sequence[str]) -> tuple[yaml.Node, list[Problem]]:
    """Apply each `path=value` in order; return the new tree and a problem per bad override.

    A bad override is skipped and the rest still apply, so one run reports every problem.
    The input tree is not modified: nodes are copied along each path (YAML aliases may share
    a node between several places, and an override must change only the place it names).
    """
    problems: list[Problem] = []
    for text in overrides:
        path_text, sep, value_text = text.partition("=")
        source = override_source(text)
        try:
            if not sep:
                raise OverrideError(f"expected dotted.key=value, got {text!r}")
            segments = _split_path(path_text)
            value = parse_value(value_text, source)
            root = _assign(root, Scenario, segments, value, "")
        except OverrideError as e:
            problems.append((source, None, str(e)))
    return root, problems


def override_source(text: str) -> str:
    """How problems name an override: `--set the.path`, without the value."""
    path_text, sep, _ = text.partition("=")
    return f"--set {path_text.strip() if sep else text}"


def parse_value(text: str, source: str) -> yaml.Node:
    """Parse the right-hand side as one YAML value (`64`, `round_robin`, `[{at: 0, rate: 2}]`).

    An empty right-hand side means null, as an empty value does in the file. The value is
    composed within the same bounds as a file (safe_yaml.py).
    """
    try:
        node = safe_yaml.compose(text)
    except safe_yaml.YAMLLimitError as e:
        raise OverrideError(f"cannot load the value: {e.message}") from None
    except yaml.YAMLError as e:
        problem = getattr(e, "problem", None) or str(e)
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise OverrideError(f"cannot parse the value {shown!r} as YAML: {problem}") from None
    if node is None:
        node = yaml.ScalarNode(NULL_TAG, "")
    _mark_tree(node, OverrideMark(source))
    return node


def split_merges(
    node: yaml.MappingNode, _seen: frozenset[int] = frozenset()
) -> tuple[list[tuple[yaml.Node, yaml.Node]], list, list]:
    """Separate a mapping's `<<` merge keys from its own pairs.

    Returns (merged pairs, own pairs, bad merge value nodes). Merged pairs come in YAML merge
    priority order (an earlier source wins); own pairs override any merged pair. A mapping
    that merges itself through an alias (`&a {<<: *a}`) counts as a bad merge, not a loop.
    """
    _seen = _seen | {id(node)}
    merged: list[tuple[yaml.Node, yaml.Node]] = []
    own: list[tuple[yaml.Node, yaml.Node]] = []
    bad: list[yaml.Node] = []
    for key, value in node.value:
        if key.tag != MERGE_TAG:
            own.append((key, value))
            continue
        sources = value.value if isinstance(value, yaml.SequenceNode) else [value]
        for source in sources:
            if isinstance(source, yaml.MappingNode) and id(source) not in _seen:
                merged.extend(_effective_pairs(source, _seen))
            else:
                bad.append(source)
    return merged, own, bad


def _effective_pairs(
    node: yaml.MappingNode, _seen: frozenset[int] = frozenset()
) -> list[tuple[yaml.Node, yaml.Node]]:
    """A mapping's pairs after merges, one per key, the winning one (own over merged)."""
    merged, own, _ = split_merges(node, _seen)
    result: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    for key, value in merged[::-1] + own:  # lowest priority first; later ones overwrite
        result[_key_text(key)] = (key, value)
    return list(result.values())


def _key_text(key: yaml.Node) -> str:
    return key.value if isinstance(key, yaml.ScalarNode) else repr(key)


def _split_path(text: str) -> list[str]:
    segments = text.strip().split(".")
    if not text.strip() or any(not s.strip() for s in segments):
        raise OverrideError(f"bad path {text.strip()!r}: expected dotted keys like cluster.nodes.0.kv_blocks")
    return [s.strip() for s in segments]


def _mark_tree(node: yaml.Node, mark: OverrideMark) -> None:
    """Attribute a node and everything under it to an override."""
    node.start_mark = node.end_mark = mark
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _mark_tree(item, mark)
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            _mark_tree(key, mark)
            _mark_tree(value, mark)


def _assign(node: yaml.Node | None, tp: Any, segments: list[str], value: yaml.Node, path: str) -> yaml.Node:
    """Return a copy of `node` (of type `tp`, at `path`) with `segments` set to `value`."""
    if not segments:
        return value
    inner, _ = split_optional(tp)
    if is_dataclass_type(inner):
        return _assign_in_mapping(node, inner, segments, value, path)
    if tuple_item(inner) is not None:
        return _assign_in_list(node, inner, segments, value, path)
    if (item := mapping_item(inner)) is not None:
        return _assign_in_named(node, item, segments, value, path)
    raise OverrideError(f"{path} is {type_phrase(inner)}; it has no key {segments[0]!r}")


def _assign_in_mapping(node, cls: type, segments: list[str], value: yaml.Node, path: str) -> yaml.Node:
    key, rest = segments[0], segments[1:]
    fields = field_types(cls)
    if key not in fields:
        raise OverrideError(unknown_key_message(key, cls, path))
    mapping = _mapping_copy(node, cls, path, value.start_mark)
    own = [i for i, (k, _) in enumerate(mapping.value) if k.tag != MERGE_TAG and _key_text(k) == key]
    field, hint = fields[key]
    if own:
        key_node, child = mapping.value[own[-1]]
    else:
        inherited = [v for k, v in _effective_pairs(mapping) if _key_text(k) == key]
        key_node = yaml.ScalarNode(STR_TAG, key, value.start_mark, value.start_mark)
        child = inherited[0] if inherited else _default_node(field, value.start_mark)
    new_child = _assign(child, hint, rest, value, join_key(path, key))
    if own:
        mapping.value[own[-1]] = (key_node, new_child)
    else:
        mapping.value.append((key_node, new_child))
    return mapping


def _assign_in_named(node, item_type: Any, segments: list[str], value: yaml.Node, path: str) -> yaml.Node:
    """`hardware.l40s.memory_gb=48`: any name is a key here; an absent one starts empty."""
    key, rest = segments[0], segments[1:]
    mapping = _mapping_copy(node, dict, path, value.start_mark)
    own = [i for i, (k, _) in enumerate(mapping.value) if k.tag != MERGE_TAG and _key_text(k) == key]
    if own:
        key_node, child = mapping.value[own[-1]]
    else:
        inherited = [v for k, v in _effective_pairs(mapping) if _key_text(k) == key]
        key_node = yaml.ScalarNode(STR_TAG, key, value.start_mark, value.start_mark)
        child = inherited[0] if inherited else None
    new_child = _assign(child, item_type, rest, value, join_key(path, key))
    if own:
        mapping.value[own[-1]] = (key_node, new_child)
    else:
        mapping.value.append((key_node, new_child))
    return mapping


def _default_node(field: dataclasses.Field, mark: OverrideMark) -> yaml.Node:
    """The field's default as YAML nodes, so `--set` into an absent key edits the default.

    (An empty mapping would not do: `turns.max=8` must keep the default `value` of `turns`,
    and `cluster.nodes.0.kv_blocks=64` must find the default node.)
    """
    if field.default is not dataclasses.MISSING:
        default = field.default
    elif field.default_factory is not dataclasses.MISSING:
        default = field.default_factory()
    else:
        return yaml.MappingNode(MAP_TAG, [], mark, mark)
    node = yaml.representer.SafeRepresenter().represent_data(to_plain(default))
    _mark_tree(node, mark)
    return node


def _assign_in_list(node, tp: Any, segments: list[str], value: yaml.Node, path: str) -> yaml.Node:
    seg, rest = segments[0], segments[1:]
    if node is not None and _is_null(node):
        node = None
    if node is not None and not isinstance(node, yaml.SequenceNode):
        raise OverrideError(f"cannot set {path}.{seg}: {path} is not a list in the scenario")
    items = list(node.value) if node is not None else []
    if not (seg.isascii() and seg.isdigit()):  # "²".isdigit() is True, int("²") fails
        raise OverrideError(f"{path} is a list: expected an item number after it, got {seg!r}")
    index = int(seg)
    if index >= len(items):
        count = f"{len(items)} item{'s' if len(items) != 1 else ''}"
        raise OverrideError(f"index {index} out of range: {path} has {count}")
    items[index] = _assign(items[index], tuple_item(tp), rest, value, join_index(path, index))
    mark = node.start_mark if node is not None else value.start_mark
    return yaml.SequenceNode(SEQ_TAG, items, mark, mark, flow_style=getattr(node, "flow_style", None))


def _mapping_copy(node, cls: type, path: str, mark) -> yaml.MappingNode:
    """A fresh mapping to edit: a copy of `node`, a new empty one, or a Dist shorthand expanded."""
    if node is None or _is_null(node):
        return yaml.MappingNode(MAP_TAG, [], mark, mark)
    if isinstance(node, yaml.MappingNode):
        return yaml.MappingNode(node.tag, list(node.value), node.start_mark, node.end_mark, node.flow_style)
    if cls is Dist and isinstance(node, yaml.ScalarNode):
        # `turns: 3` is `{dist: fixed, value: 3}`; spell it out so one key can change.
        pairs = [
            (yaml.ScalarNode(STR_TAG, "dist", node.start_mark, node.end_mark),
             yaml.ScalarNode(STR_TAG, "fixed", node.start_mark, node.end_mark)),
            (yaml.ScalarNode(STR_TAG, "value", node.start_mark, node.end_mark), node),
        ]
        return yaml.MappingNode(MAP_TAG, pairs, node.start_mark, node.end_mark)
    where = path or "the top level"
    raise OverrideError(f"cannot set a key in {where}: it is not a mapping in the scenario")


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == NULL_TAG
