"""Scenario YAML -> the typed, frozen `Scenario`, with every problem reported at once.

The loader knows no field by name when it builds: it walks the type hints of the dataclasses
in `kvtui.scenario.model`, so a new field there is loadable, validated and overridable with
no change here. YAML is composed (not constructed) with the safe loader, which keeps a line
mark on every node: each problem is reported as (file, line, message) and all of them are
raised together in one `InputError`, so a user fixes a file in one pass, not one error a run.

After building come the checks that span fields (node names, references to nodes, registry
names, trace paths, KV capacity); those are the only parts that know the model's field names.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field, replace
import os
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml
from yaml.constructor import ConstructorError, SafeConstructor

from kvtui.errors import InputError
from kvtui.scenario import safe_yaml
from kvtui.scenario.cost import estimate
from kvtui.scenario.model import Dist, HardwareProfile, Metadata, ModelProfile, Scenario, ScriptedEvent, Trace
from kvtui.scenario.hints import listing, suggestion
from kvtui.scenario.replication import check_replication
from kvtui.scenario.overrides import NULL_TAG, OverrideMark, apply_overrides, override_source, split_merges
from kvtui.scenario.schema import (
    field_choices,
    field_types,
    is_dataclass_type,
    join_index,
    join_key,
    literal_choices,
    mapping_item,
    parent_path,
    place,
    split_optional,
    tuple_item,
    type_phrase,
    unknown_key_message,
)
from kvtui.profiles import gb, tp_problem
from kvtui.scenario.plan import NodePlan, node_plans
from kvtui.scenario.roles import check_roles
from kvtui.scenario.serving import profile_catalog

__all__ = ["load_scenario"]

INT_TAG = "tag:yaml.org,2002:int"
FLOAT_TAG = "tag:yaml.org,2002:float"
BOOL_TAG = "tag:yaml.org,2002:bool"
STR_TAG = "tag:yaml.org,2002:str"
# The tags a scenario can use; anything else (`!!python/object`, `!custom`) is refused.
PLAIN_TAGS = {
    NULL_TAG, BOOL_TAG, INT_TAG, FLOAT_TAG, STR_TAG,
    "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map",
}

MAX_STRING = 4096  # the upper bound of every text field (names, descriptions, paths)

# Returned instead of a value that could not be built; its problem is already reported.
INVALID: Any = type("Invalid", (), {"__repr__": lambda self: "INVALID"})()


def load_scenario(path: str | Path, overrides: Sequence[str] = (), limits: bool = False) -> Scenario:
    """Read, override, build and check a scenario file; raise InputError listing every problem.

    `overrides` are `dotted.key=value` strings (the CLI's `--set`), applied to the YAML tree
    before building so that overridden values are validated like the file's own. `limits`
    (the CLI sets it) adds the checks that make "valid" mean "runs to an end": the workload
    ends and no request is too long (kvtui.scenario.cost). Library callers that drive a
    simulation step by step may leave it off.
    """
    file = str(path)
    overrides = [overrides] if isinstance(overrides, str) else list(overrides)
    root = _read_yaml(Path(path), file)
    if not isinstance(root, yaml.MappingNode):
        raise InputError.one(
            file,
            _line_of(root),
            f"the top level of a scenario must be a mapping of keys (name, cluster, workload, ...), "
            f"got {_describe(root)}",
        )
    root, override_problems = apply_overrides(root, overrides)
    builder = _Builder(file, Path(path).parent)
    builder.problems.extend(override_problems)
    scenario = builder.build(root)
    if scenario is not INVALID and scenario.profiles:
        scenario = _with_profile_files(scenario, builder)
    if scenario is not INVALID:
        _check_scenario(scenario, builder)
    if limits and scenario is not INVALID and not builder.problems:
        for key, message in estimate(scenario).limits:  # the workload ends; no request is too long
            builder.report_at(key, f"{key}: {message}")
    problems = builder.sorted_problems([override_source(text) for text in overrides])
    if problems:
        raise InputError(problems)
    return scenario


# ---------------------------------------------------------------------------------------------
# Reading


def _read_yaml(path: Path, file: str) -> yaml.Node:
    """The file's YAML node tree; InputError for a missing, unreadable, malformed, empty or
    oversized file (size, depth and alias expansion are bounded while composing: safe_yaml.py)."""
    try:
        if (kind := _special_file(path)) is not None:  # reading a fifo would block forever
            raise InputError.one(file, None, f"is {kind}, not a scenario file")
        if path.is_file() and path.stat().st_size > safe_yaml.MAX_BYTES:
            raise InputError.one(file, None, f"more than {safe_yaml.MAX_BYTES:,} bytes, the limit of a scenario file")
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError.one(file, None, "no such file") from None
    except IsADirectoryError:
        raise InputError.one(file, None, "is a directory, not a scenario file") from None
    except OSError as e:
        raise InputError.one(file, None, f"cannot read the file: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError.one(file, line, f"not UTF-8 text (byte 0x{data[e.start]:02x})") from None
    try:
        root = safe_yaml.compose(text)
    except safe_yaml.YAMLLimitError as e:
        raise InputError.one(file, e.line, e.message) from None
    except yaml.MarkedYAMLError as e:
        raise InputError.one(file, _mark_line(e.problem_mark), _yaml_error_message(e)) from None
    except yaml.reader.ReaderError as e:
        line = text[: e.position].count("\n") + 1
        char = f"U+{e.character:04X}" if isinstance(e.character, int) else repr(e.character)
        raise InputError.one(file, line, f"YAML syntax error: {e.reason} ({char})") from None
    except yaml.YAMLError as e:
        raise InputError.one(file, None, f"YAML syntax error: {e}") from None
    if root is None:
        raise InputError.one(file, None, "the scenario file is empty")
    return root


def _special_file(path: Path) -> str | None:
    """"a fifo", "a character device", ... for an existing path that is neither a regular file
    nor a directory (those two get their own messages); None otherwise."""
    import stat

    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    for test, kind in ((stat.S_ISFIFO, "a fifo"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def _yaml_error_message(e: yaml.MarkedYAMLError) -> str:
    """PyYAML's problem, plus what it was parsing and where that began (often the real cause)."""
    message = f"YAML syntax error: {e.problem or e.context or 'unreadable'}"
    if e.problem and e.context:
        started = _mark_line(e.context_mark)
        message += f" ({e.context}" + (f" that began at line {started})" if started else ")")
    return message


def _mark_line(mark) -> int | None:
    line = getattr(mark, "line", None)
    return line + 1 if line is not None else None


def _line_of(node: yaml.Node) -> int | None:
    return None if isinstance(node.start_mark, OverrideMark) else _mark_line(node.start_mark)


def _describe(node: yaml.Node) -> str:
    """A node as a user would name it in "got ..." messages."""
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if node.tag == NULL_TAG:
        return "nothing (an empty value)" if node.value == "" else "null"
    if node.tag == STR_TAG:
        return repr(node.value)
    return node.value


def _is_finite(number: int | float) -> bool:
    try:
        return math.isfinite(number)
    except OverflowError:  # an int too big for a float
        return False


def _fmt(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)


# ---------------------------------------------------------------------------------------------
# Building


class _Builder:
    """Builds dataclasses from YAML nodes by their type hints, collecting problems as it goes.

    `locations` maps each built key path (`cluster.nodes[0].name`) to where its value was
    written, so checks that run after building can still point at a line.
    """

    def __init__(self, file: str, base_dir: Path):
        self.file = file
        self.base_dir = base_dir
        self.problems: list[tuple[str, int | None, str]] = []
        self.locations: dict[str, tuple[str, int | None]] = {}
        self.bad_paths: set[str] = set()
        self._constructor = SafeConstructor()
        self._post_checks = {Dist: self._check_dist, Trace: self._check_trace, ScriptedEvent: self._check_event,
                             Metadata: self._check_metadata}

    # -- reporting ------------------------------------------------------------------------

    def where(self, node: yaml.Node) -> tuple[str, int | None]:
        mark = node.start_mark
        if isinstance(mark, OverrideMark):
            return mark.source, None
        return self.file, _mark_line(mark)

    def report(self, node: yaml.Node, message: str, bad_path: str | None = None) -> None:
        """Record a problem at a node; `bad_path` marks a value as unusable for later checks."""
        self.problems.append((*self.where(node), message))
        if bad_path is not None:
            self.bad_paths.add(bad_path)

    def report_at(self, path: str, message: str) -> None:
        """Record a problem at a key path: where it was written, or its closest written parent."""
        self.problems.append((*self.locate(path), message))

    def locate(self, path: str) -> tuple[str, int | None]:
        while path not in self.locations and path:
            path = parent_path(path)
        return self.locations.get(path, (self.file, None))

    def is_clean(self, path: str) -> bool:
        """True when nothing at or under `path` failed to build (so its values are the user's)."""
        if not path:
            return not self.bad_paths
        return not any(bad == path or bad.startswith((path + ".", path + "[")) for bad in self.bad_paths)

    def sorted_problems(self, override_sources: list[str]) -> list[tuple[str, int | None, str]]:
        """Problems in file order, then by override in command-line order; each only once.

        (A node shared through a YAML anchor is built once per use, so its problems repeat.)
        """
        rank = {source: i for i, source in reversed(list(enumerate(override_sources)))}

        def key(problem):
            file, line, _ = problem
            return (0, line or 0) if file == self.file else (1, rank.get(file, len(rank)))

        return sorted(dict.fromkeys(self.problems), key=key)

    # -- values ---------------------------------------------------------------------------

    def build(self, root: yaml.MappingNode, cls: type = Scenario) -> Any:
        self.locations[""] = self.where(root)
        return self._value(root, cls, "", {}, None)

    def _value(self, node: yaml.Node, tp: Any, path: str, meta: Mapping, choices: tuple | None) -> Any:
        """Build the value of type `tp` written at `node`; INVALID (reported) when it is wrong."""
        if node.tag not in PLAIN_TAGS:
            self.report(node, f"{_label(path)}: unsupported YAML tag {node.tag!r}", path)
            return INVALID
        inner, optional = split_optional(tp)
        if node.tag == NULL_TAG and isinstance(node, yaml.ScalarNode):
            return None if optional else self._mismatch(node, inner, path)
        if inner is Dist and isinstance(node, yaml.ScalarNode):
            return self._dist_shorthand(node, path)
        if is_dataclass_type(inner):
            return self._dataclass(node, inner, path)
        if (item_type := tuple_item(inner)) is not None:
            return self._tuple(node, item_type, path, meta)
        if (item_type := mapping_item(inner)) is not None:
            return self._named(node, item_type, path)
        if (literal := literal_choices(inner)) is not None:
            return self._choice(node, path, literal, inner)
        return self._scalar(node, inner, path, meta, choices)

    def _mismatch(self, node: yaml.Node, tp: Any, path: str) -> Any:
        self.report(node, f"{_label(path)}: expected {type_phrase(tp)}, got {_describe(node)}", path)
        return INVALID

    def _dataclass(self, node: yaml.Node, cls: type, path: str) -> Any:
        """A mapping -> `cls(**fields)`; unknown keys are reported with the closest valid one."""
        if not isinstance(node, yaml.MappingNode):
            return self._mismatch(node, cls, path)
        fields = field_types(cls)
        kwargs = {}
        for key_node, value_node in self._pairs(node, path):
            if not isinstance(key_node, yaml.ScalarNode):
                self.report(key_node, f"keys must be plain names {place(path)}, got {_describe(key_node)}")
                continue
            key = key_node.value
            if key not in fields:
                self.report(key_node, unknown_key_message(key, cls, path))
                continue
            field, hint = fields[key]
            child = join_key(path, key)
            self.locations[child] = self.where(value_node)
            value = self._value(value_node, hint, child, field.metadata, field_choices(cls, key, field.metadata))
            if value is not INVALID:
                kwargs[key] = value
        missing, failed = self._missing_required(cls, kwargs, path)
        if missing:
            self.report(node, f"{_label(path)}: missing {missing}", path)
        if missing or failed:  # a required value that failed to build is reported already
            return INVALID
        try:
            obj = cls(**kwargs)
        except (TypeError, ValueError) as e:  # a __post_init__ in the model may refuse values
            self.report(node, f"{_label(path)}: {e}", path)
            return INVALID
        check = self._post_checks.get(cls)
        return check(obj, node, path) if check and self.is_clean(path) else obj

    def _pairs(self, node: yaml.MappingNode, path: str) -> list[tuple[yaml.Node, yaml.Node]]:
        """The mapping's key/value pairs: own keys once each, then keys from `<<` merges."""
        merged, own, bad_merges = split_merges(node)
        for source in bad_merges:
            self.report(source, f"a '<<' merge {place(path)} needs a mapping or a list of mappings")
        first_line: dict[str, int | None] = {}
        pairs = []
        for key_node, value_node in own:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key is not None and key in first_line:
                also = f" (first at line {first_line[key]})" if first_line[key] else ""
                self.report(key_node, f"duplicate key {key!r} {place(path)}{also}")
                continue
            if key is not None:
                first_line[key] = self.where(key_node)[1]
            pairs.append((key_node, value_node))
        for key_node, value_node in merged:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key is None or key not in first_line:
                first_line.setdefault(key, None)
                pairs.append((key_node, value_node))
        return pairs

    def _missing_required(self, cls: type, kwargs: dict, path: str) -> tuple[str, bool]:
        """(the required keys not given, as words; whether a required value failed to build)."""
        absent = [
            name for name, (f, _) in field_types(cls).items()
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and name not in kwargs
        ]
        names = [name for name in absent if self.is_clean(join_key(path, name))]
        failed = len(names) < len(absent)
        if not names:
            return "", failed
        return ("required key " if len(names) == 1 else "required keys ") + ", ".join(repr(n) for n in names), failed

    def _named(self, node: yaml.Node, item_type: Any, path: str) -> Any:
        """A mapping of user-chosen names -> values of `item_type` (e.g. `hardware: {l40s: ...}`)."""
        if not isinstance(node, yaml.MappingNode):
            return self._mismatch(node, dict[str, item_type], path)
        items = {}
        for key_node, value_node in self._pairs(node, path):
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag not in (STR_TAG, INT_TAG, FLOAT_TAG):
                self.report(key_node, f"names {place(path)} must be plain text, got {_describe(key_node)}")
                continue
            child = join_key(path, key_node.value)
            self.locations[child] = self.where(value_node)
            value = self._value(value_node, item_type, child, {}, None)
            if value is not INVALID:
                items[key_node.value] = value
        return items

    def _tuple(self, node: yaml.Node, item_type: Any, path: str, meta: Mapping) -> Any:
        """A list; a numeric item takes the field's bounds (`ladder: [..]` rates are bounded)."""
        if not isinstance(node, yaml.SequenceNode):
            return self._mismatch(node, tuple[item_type, ...], path)
        items = []
        for index, item_node in enumerate(node.value):
            child = join_index(path, index)
            self.locations[child] = self.where(item_node)
            value = self._value(item_node, item_type, child, meta, None)
            if value is not INVALID:
                items.append(value)
        return tuple(items)

    def _choice(self, node: yaml.Node, path: str, choices: tuple, tp: Any = str) -> Any:
        """One of a fixed set of names; a near miss gets a "did you mean"."""
        if not isinstance(node, yaml.ScalarNode):
            return self._mismatch(node, tp, path)
        by_text = {str(c): c for c in choices}
        if node.value in by_text:
            return by_text[node.value]
        listed = ", ".join(by_text)
        hint = suggestion(node.value, by_text)
        self.report(node, f"{_label(path)}: {node.value!r} is not one of: {listed}{hint}", path)
        return INVALID

    def _scalar(self, node: yaml.Node, tp: type, path: str, meta: Mapping, choices: tuple | None) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            return self._mismatch(node, tp, path)
        if tp is str:
            if len(node.value) > MAX_STRING:  # names travel into the store (names <= 64 KiB) and onto screens
                self.report(node, f"{_label(path)}: longer than {MAX_STRING:,} characters ({len(node.value):,})", path)
                return INVALID
            return self._choice(node, path, choices) if choices else node.value
        if tp is bool:
            return self._construct(node) if node.tag == BOOL_TAG else self._mismatch(node, tp, path)
        if tp in (int, float):
            return self._number(node, tp, path, meta)
        raise TypeError(f"unsupported type in the scenario model at {path}: {tp!r}")

    def _number(self, node: yaml.ScalarNode, tp: type, path: str, meta: Mapping) -> Any:
        """An int or float within the field's bounds. Ints are fine for floats; bools never."""
        number = self._parse_number(node)
        if number is None:
            return self._mismatch(node, tp, path)
        if not _is_finite(number):
            self.report(node, f"{_label(path)}: expected a finite number, got {node.value}", path)
            return INVALID
        if tp is int:
            if isinstance(number, float) and not number.is_integer():
                return self._mismatch(node, tp, path)
            number = int(number)
        else:
            number = float(number)
        low, high = meta.get("min"), meta.get("max")
        if (low is not None and number < low) or (high is not None and number > high):
            if low is not None and high is not None:
                bound = f"between {_fmt(low)} and {_fmt(high)}"
            else:
                bound = f">= {_fmt(low)}" if low is not None else f"<= {_fmt(high)}"
            self.report(node, f"{_label(path)}: must be {bound}, got {_fmt(number)}", path)
            return INVALID
        return number

    def _parse_number(self, node: yaml.ScalarNode) -> int | float | None:
        """The node's number, or None. Plain `1e3` is a string to YAML 1.1 but a number here."""
        if node.tag in (INT_TAG, FLOAT_TAG):
            value = self._construct(node)
            return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if node.tag == STR_TAG and node.style is None:
            for parse in (int, float):
                try:
                    return parse(node.value)
                except ValueError:
                    pass
        return None

    def _construct(self, node: yaml.ScalarNode) -> Any:
        """The Python value of a scalar as the safe loader would make it (None if it cannot)."""
        try:
            return self._constructor.construct_object(node)
        except (ConstructorError, ValueError, TypeError):
            return None

    def _dist_shorthand(self, node: yaml.ScalarNode, path: str) -> Any:
        """`turns: 3` means `{dist: fixed, value: 3}`."""
        if self._parse_number(node) is None:
            return self._mismatch(node, Dist, path)
        value_field = field_types(Dist)["value"][0]
        value = self._number(node, float, path, value_field.metadata)
        return INVALID if value is INVALID else Dist(dist="fixed", value=value)

    # -- checks of one object, run right after it is built ----------------------------------

    def _check_dist(self, dist: Dist, node: yaml.Node, path: str) -> Dist:
        if dist.dist == "uniform" and dist.high < dist.low:
            self.report_at(
                join_key(path, "high"),
                f"{_label(path)}: uniform needs high >= low, got low={_fmt(dist.low)} high={_fmt(dist.high)}",
            )
        if dist.min is not None and dist.max is not None and dist.min > dist.max:
            self.report_at(
                join_key(path, "max"),
                f"{_label(path)}: needs min <= max, got min={_fmt(dist.min)} max={_fmt(dist.max)}",
            )
        return dist

    def _check_trace(self, trace: Trace, node: yaml.Node, path: str) -> Trace:
        """Resolve the trace path and check it exists.

        A path written in the file is relative to the file's directory (scenarios travel with
        their traces); one given with --set is relative to the working directory, like any
        other command-line path.
        """
        key = join_key(path, "path")
        if not trace.path:
            self.report_at(key, f"{key}: a trace needs a path")
            return trace
        written_in_file = self.locate(key)[0] == self.file
        base = self.base_dir if written_in_file else Path.cwd()
        resolved = Path(os.path.abspath(base / Path(trace.path).expanduser()))
        if not resolved.exists():
            self.report_at(key, f"{key}: trace {trace.path!r} not found (looked for {resolved})")
            return trace
        if (kind := _special_file(resolved)) is not None:
            self.report_at(key, f"{key}: trace {trace.path!r} is {kind}, not a file or a directory")
            return trace
        return dataclasses.replace(trace, path=str(resolved))

    def _check_metadata(self, metadata: Metadata, node: yaml.Node, path: str) -> Metadata:
        """A `dir` that already holds files is another run's log: a new run would recover it and
        start from its state (other figures, stale decisions). Refused unless `resume` says so."""
        if metadata.dir and not metadata.resume and _non_empty_dir(metadata.dir):
            key = join_key(path, "dir")
            self.report_at(key, f"{key}: {metadata.dir!r} is not empty (another run's log?): give an empty "
                                "or new directory, or set metadata.resume: true to continue that log")
        return metadata

    def _check_event(self, event: ScriptedEvent, node: yaml.Node, path: str) -> ScriptedEvent:
        if event.action in ("node_down", "node_up") and event.node is None:
            self.report(node, f"{_label(path)}: {event.action} needs a node")
        return event


@dataclass(frozen=True)
class ProfileFile:
    """A file of profiles a scenario's `profiles:` names (what `kvtui calibrate --out` writes)."""

    hardware: dict[str, HardwareProfile] = field(default_factory=dict)
    models: dict[str, ModelProfile] = field(default_factory=dict)


def _with_profile_files(scenario: Scenario, b: _Builder) -> Scenario:
    """The scenario with the profiles of its `profiles:` files under its own (its own win; a
    later file wins over an earlier one). A path written in the scenario is relative to it, one
    given with --set to the working directory (as a trace's). A file's problems are its own."""
    hardware: dict[str, HardwareProfile] = {}
    models: dict[str, ModelProfile] = {}
    for i, name in enumerate(scenario.profiles):
        key = f"profiles[{i}]"
        base = b.base_dir if b.locate(key)[0] == b.file else Path.cwd()
        path = Path(os.path.abspath(base / Path(name).expanduser()))
        try:
            root = _read_yaml(path, name)
        except InputError as e:
            b.problems.extend((file, line, f"{key}: {message}") for file, line, message in e.problems)
            continue
        sub = _Builder(name, path.parent)
        built = sub.build(root, ProfileFile) if isinstance(root, yaml.MappingNode) else INVALID
        if not isinstance(root, yaml.MappingNode):
            sub.report(root, f"a profile file is a mapping with hardware: and models:, got {_describe(root)}")
        b.problems.extend(sub.problems)
        if built is not INVALID:
            hardware.update(built.hardware)
            models.update(built.models)
    return replace(scenario, hardware={**hardware, **scenario.hardware}, models={**models, **scenario.models})


def _non_empty_dir(directory: str) -> bool:
    path = Path(directory).expanduser()
    return path.is_dir() and any(path.iterdir())


def _label(path: str) -> str:
    return path or "the top level"


# ---------------------------------------------------------------------------------------------
# Checks across fields, on the built Scenario


def _check_scenario(scenario: Scenario, b: _Builder) -> None:
    """Cross-field rules; each skips what failed to build, so one mistake is reported once."""
    _check_node_names(scenario, b)
    if _node_names_built(b):
        _check_node_references(scenario, b)
    _check_profile_names(scenario, b)
    plans = node_plans(scenario)  # once for the capacity and the roles checks
    _check_capacity(scenario, plans, b)
    _check_groups(scenario, b)
    _check_story(scenario, b)
    _check_router(scenario, b)
    if b.is_clean("cluster.nodes"):
        check_roles(scenario, plans, b.report_at)
    if b.is_clean("metadata") and b.is_clean("events"):
        check_replication(scenario, b.report_at)


MIN_EVICTION_INTERVAL_S = 1e-3
"""SGLang's eviction timer catches up one interval at a time (kvtui/sim/router/sglang.py): a
shorter interval is a loop that does not advance (1e-300 s never moves a clock of seconds)."""


def _check_router(scenario: Scenario, b: _Builder) -> None:
    """Router settings that would hang a run, or need a package that is not installed."""
    interval = scenario.router.sglang.eviction_interval_s
    if 0 < interval < MIN_EVICTION_INTERVAL_S:
        path = "router.sglang.eviction_interval_s"
        b.report_at(path, f"{path}: must be 0 (never) or at least {MIN_EVICTION_INTERVAL_S:g} s, got {interval:g}")
    pl = scenario.router.predicted_latency
    if pl.objective == "quantile" and pl.regressor != "xgboost":
        path = "router.predicted_latency.objective"
        b.report_at(path, f"{path}: quantile trains XGBoost's quantile objective; set regressor: xgboost "
                    "(the linear regressor fits the relative mean only)")
    if scenario.router.predicted_latency.regressor == "xgboost" and not _xgboost_installed():
        path = "router.predicted_latency.regressor"
        b.report_at(path, f"{path}: xgboost needs the xgboost package, which is not installed here; "
                    "`pip install 'kvtui[xgboost]'`, or use regressor: linear")


def _xgboost_installed() -> bool:
    try:
        import xgboost  # noqa: F401, PLC0415  (optional dependency: is it there?)
    except Exception:  # noqa: BLE001 - an ImportError, or a broken install (its native library)
        return False
    return True


def _check_story(scenario: Scenario, b: _Builder) -> None:
    """Story chapters are told in time order (the app steps from one to the next)."""
    for i in range(1, len(scenario.story)):
        if scenario.story[i].at < scenario.story[i - 1].at and b.is_clean(f"story[{i}].at"):
            path = f"story[{i}].at"
            b.report_at(path, f"{path}: chapters must be in time order ({scenario.story[i].at:g} s comes after {scenario.story[i - 1].at:g} s)")


def _check_node_names(scenario: Scenario, b: _Builder) -> None:
    nodes = scenario.cluster.nodes
    if not nodes:
        b.report_at("cluster.nodes", "cluster.nodes: a cluster needs at least one node")
    first: dict[str, int] = {}
    for i, spec in enumerate(nodes):
        if spec.name in first:
            b.report_at(
                f"cluster.nodes[{i}].name",
                f"cluster.nodes[{i}].name: duplicate node name {spec.name!r} "
                f"(also cluster.nodes[{first[spec.name]}]); node names must be unique",
            )
        first.setdefault(spec.name, i)


def _node_names_built(b: _Builder) -> bool:
    """Every node entry built with its own name, whatever else in it failed: references to nodes
    can be checked in the same report (a bad `kv_blocks` no longer hides an unknown node until
    it is fixed). Not when a node or its name failed: its references would read as unknown."""
    node = re.compile(r"cluster\.nodes(\[\d+\](\.name)?)?$")
    return not any(node.match(bad) for bad in b.bad_paths)


def _check_node_references(scenario: Scenario, b: _Builder) -> None:
    """`pin_on` and scripted events must name nodes that exist."""
    names = [spec.name for spec in scenario.cluster.nodes]

    def check(path: str, name: str) -> None:
        if name not in names:
            hint = suggestion(name, names) or f"; nodes: {listing(names)}"
            b.report_at(path, f"{path}: unknown node {name!r}{hint}")

    for g, group in enumerate(scenario.workload.groups):
        for k, name in enumerate(group.pin_on):
            check(f"workload.groups[{g}].pin_on[{k}]", name)
    for e, event in enumerate(scenario.events):
        if event.node is not None:
            check(f"events[{e}].node", event.node)


def _check_profile_names(scenario: Scenario, b: _Builder) -> None:
    """`model` and every `hardware` must name a shipped profile or one the scenario defines."""
    hardware, models = profile_catalog(scenario)

    def check(path: str, name: str | None, known: dict, section: str) -> None:
        # a name of a user profile that failed to build: that problem is reported already
        if name is None or name in known or not b.is_clean(path) or not b.is_clean(join_key(section, name)):
            return
        b.report_at(path, f"{path}: {name!r} is not one of: {', '.join(known)}{suggestion(name, known)}")
        b.bad_paths.add(path)

    check("model", scenario.model, models, "models")
    check("cluster.hardware", scenario.cluster.hardware, hardware, "hardware")
    for i, spec in enumerate(scenario.cluster.nodes):
        check(f"cluster.nodes[{i}].hardware", spec.hardware, hardware, "hardware")


def _check_capacity(scenario: Scenario, plans: list[NodePlan], b: _Builder) -> None:
    """Each node must fit on its GPUs at gpu_memory_utilization, as vLLM sizes them.

    Per GPU: weights/TP + activations + KV (derived, or the forced `kv_blocks`) must fit in
    `gpu_memory_utilization x memory`; a derived capacity must leave at least one block.
    Reported at the node, with the numbers in GB.
    """
    model = profile_catalog(scenario)[1].get(scenario.model)
    if model is None or not (b.is_clean("model") and b.is_clean("cluster.block_size")):
        return
    for i, plan in enumerate(plans):
        path, spec, hw = f"cluster.nodes[{i}]", plan.spec, plan.hardware
        hw_path = f"{path}.hardware" if spec.hardware is not None else "cluster.hardware"
        if hw is None or not (b.is_clean(path) and b.is_clean(hw_path)):
            continue
        tp_path = f"{path}.tensor_parallel" if spec.tensor_parallel is not None else "cluster.tensor_parallel"
        if problem := tp_problem(model, plan.tp):
            b.report_at(tp_path, f"{path} ({spec.name!r}): tensor_parallel {plan.tp} does not fit {model.name}: {problem}")
            continue
        if plan.tp > 1 and hw.link_bytes_per_s <= 0:
            b.report_at(hw_path, f"{path} ({spec.name!r}): tensor_parallel {plan.tp} needs an interconnect, "
                        f"but {hw.name} has no interconnect_gb_s")
        if message := _fit_problem(plan.fit, spec.kv_blocks, model.name, hw.name, spec.gpu_memory_utilization):
            b.report_at(path, f"{path} ({spec.name!r}): {message}")


def _fit_problem(fit, kv_blocks: int | None, model: str, hardware: str, util: float) -> str | None:
    """What does not fit on each GPU, with the numbers in GB; None when everything fits."""
    gpus = f"{fit.tp} x {hardware}" if fit.tp > 1 else hardware
    budget = f"{gb(fit.budget)} GB (gpu_memory_utilization {_fmt(util)} of {gb(fit.budget / util)} GB)"
    parts = f"weights {gb(fit.weights)} GB + activations {gb(fit.activations)} GB"
    if kv_blocks is not None:
        need = fit.weights + fit.activations + fit.kv_bytes(kv_blocks)
        if need <= fit.budget:
            return None
        return (f"kv_blocks {kv_blocks} do not fit in {gpus}: per GPU, {parts} + KV {gb(fit.kv_bytes(kv_blocks))} GB "
                f"= {gb(need)} GB > {budget}; room for {fit.blocks} blocks; lower kv_blocks, "
                f"raise tensor_parallel, or use bigger hardware")
    if fit.blocks >= 1:
        return None
    what = "do not fit" if fit.weights + fit.activations >= fit.budget else "leave no room for one KV block"
    return (f"the {model} weights {what} in {gpus}: per GPU, {parts} = {gb(fit.weights + fit.activations)} GB "
            f"of {budget}; raise tensor_parallel, use bigger hardware, or raise gpu_memory_utilization")


def _check_groups(scenario: Scenario, b: _Builder) -> None:
    """Synthetic workloads need a group to draw sessions from, and weights to draw by."""
    workload = scenario.workload
    if workload.trace is not None and workload.shared_prefix is not None:
        b.report_at("workload.shared_prefix", "workload.shared_prefix: give either a trace or a shared_prefix generator, not both")
    if workload.trace is not None or workload.shared_prefix is not None or not b.is_clean("workload.groups"):
        return
    if not workload.groups:
        b.report_at("workload.groups", "workload.groups: needs at least one prefix group (or a workload.trace)")
    elif workload.group_order == "weighted" and sum(g.weight for g in workload.groups) <= 0:
        b.report_at("workload.groups", "workload.groups: the group weights add up to 0")
