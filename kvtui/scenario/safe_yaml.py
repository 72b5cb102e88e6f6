"""YAML composition with bounds on what it builds: size, depth, and alias/merge expansion.

PyYAML's safe loader refuses arbitrary objects but not arbitrary *amounts*: aliases share
nodes, so a 42 kB file of nested aliases ("billion laughs") expands to billions of nodes
when the loader later walks every use; a chain of 600 `<<: *prev` merges or 900 nested
brackets overflows Python's stack (RecursionError); `&a [*a]` is a node that contains itself.

Here the composer measures while it builds, before any of that can happen:

- the raw text is at most `MAX_BYTES`;
- the nesting depth, counted as composing descends, is at most `MAX_DEPTH` -- checked on
  the way down, so no recursion ever gets deeper than that;
- every finished node records its *expanded* size (itself plus all it contains, an alias
  counting as the whole node it names) and its expanded depth; a node whose expansion exceeds
  `MAX_NODES` or `MAX_DEPTH` is refused at its own line, so a bomb stops at the first level
  that crosses the bound, after work proportional to the text, not to the expansion;
- an alias to an anchor still being composed (a node containing itself) is refused.

A merge key (`<<: *base`) is an alias like any other, so merges are bounded by the same
measure. Bounds are far above any real scenario (the shipped ones: < 5 kB, depth < 10, < 2,000
nodes expanded) and low enough that the loader's walk of the expanded tree takes well under a
second. The rule the limits follow is PyYAML's own composer (6.0.4, `yaml/composer.py`:
`compose_node` resolves an alias to the anchored node itself, shared, not a copy), which is why
the expansion has to be counted rather than observed.
"""

from __future__ import annotations

import yaml
from yaml.events import AliasEvent

MAX_BYTES = 1 << 20
MAX_DEPTH = 48
MAX_NODES = 50_000


class YAMLLimitError(Exception):
    """The text would build more than the bounds allow; `line` is 1-based (None: whole text)."""

    def __init__(self, message: str, line: int | None):
        super().__init__(message)
        self.message = message
        self.line = line


class BoundedLoader(yaml.SafeLoader):
    """A SafeLoader whose composer counts the expanded size and depth of each node it builds."""

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0
        self._open_anchors: set[str] = set()
        self._measure: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded nodes, depth)

    def compose_node(self, parent, index):
        if self.check_event(AliasEvent):
            event = self.peek_event()
            if event.anchor in self._open_anchors:
                raise YAMLLimitError(
                    f"alias *{event.anchor} refers to a node that contains it (a loop)", _line(event.start_mark)
                )
            node = super().compose_node(parent, index)
            nodes, depth = self._measure[id(node)]
            self._check(nodes, depth + self._depth, event.start_mark, f"alias *{event.anchor}")
            return node
        event = self.peek_event()
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise YAMLLimitError(f"YAML nested more than {MAX_DEPTH} levels deep (the limit)", _line(event.start_mark))
        anchor = event.anchor
        if anchor is not None:
            self._open_anchors.add(anchor)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
            if anchor is not None:
                self._open_anchors.discard(anchor)
        self._record(node)
        return node

    def _record(self, node: yaml.Node) -> None:
        """The node's expanded (size, depth) from its children's, checked against the bounds."""
        if isinstance(node, yaml.ScalarNode):
            children = []
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            children = [part for pair in node.value for part in pair]
        nodes, depth = 1, 1
        for child in children:
            c_nodes, c_depth = self._measure[id(child)]
            nodes += c_nodes
            depth = max(depth, c_depth + 1)
        self._measure[id(node)] = (nodes, depth)
        self._check(nodes, depth + self._depth, node.start_mark, "the value here")

    def _check(self, nodes: int, depth: int, mark, what: str) -> None:
        if nodes > MAX_NODES:
            raise YAMLLimitError(
                f"{what} expands (through aliases or merges) to more than {MAX_NODES:,} YAML nodes (the limit)", _line(mark)
            )
        if depth > MAX_DEPTH:
            raise YAMLLimitError(
                f"{what} nests (through aliases or merges) more than {MAX_DEPTH} levels deep (the limit)", _line(mark)
            )


def compose(text: str) -> yaml.Node | None:
    """The node tree of one YAML document, within the bounds; YAMLLimitError past them.

    Syntax errors propagate as PyYAML's own exceptions, for the caller to word.
    """
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise YAMLLimitError(f"{size:,} bytes of YAML, more than the limit of {MAX_BYTES:,}", None)
    loader = BoundedLoader(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def _line(mark) -> int | None:
    line = getattr(mark, "line", None)
    return line + 1 if line is not None else None
