"""The shape of a scenario file, read off the dataclasses in `kvtui.scenario.model`.

Two things live here:

- the type introspection the loader and `--set` share, so all three (loading, overriding,
  the JSON Schema) agree on what a field accepts;
- `scenario_json_schema()`, a JSON Schema (draft 2020-12) for editors and other tools.

Nothing here knows a field by name except `EXTERNAL_CHOICES`: names whose valid values live
in other modules (routing policies, model and hardware profiles).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, Callable, Literal

from kvtui.scenario.model import Cluster, Dist, NodeSpec, Router, Scenario
from kvtui.profiles import shipped_hardware, shipped_models
from kvtui.scenario.policies import POLICY_NAMES
from kvtui.scenario.hints import suggestion

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

# Fields whose valid values are defined elsewhere; looked up lazily so the lists stay live.
EXTERNAL_CHOICES: dict[tuple[type, str], Callable[[], tuple[str, ...]]] = {
    (Router, "policy"): lambda: tuple(POLICY_NAMES),
}

# Profile names: the shipped ones, plus whatever the scenario defines under `hardware:` /
# `models:`, so the loader checks them after building (in `_check_profile_names`), and the
# JSON Schema lists the shipped ones as examples rather than as an enum.
PROFILE_NAME_FIELDS: dict[tuple[type, str], Callable[[], tuple[str, ...]]] = {
    (Scenario, "model"): lambda: tuple(shipped_models()),
    (Cluster, "hardware"): lambda: tuple(shipped_hardware()),
    (NodeSpec, "hardware"): lambda: tuple(shipped_hardware()),
}


# ---------------------------------------------------------------------------------------------
# Type introspection shared by the loader, `--set` and the schema


@functools.cache
def field_types(cls: type) -> dict[str, tuple[dataclasses.Field, Any]]:
    """A dataclass's fields with their resolved type hints, in declaration order.

    model.py uses `from __future__ import annotations`, so `Field.type` is only a string;
    `get_type_hints` turns it back into real types.
    """
    hints = typing.get_type_hints(cls)
    return {f.name: (f, hints[f.name]) for f in dataclasses.fields(cls)}


def split_optional(tp: Any) -> tuple[Any, bool]:
    """`X | None` -> (X, True); anything else -> (tp, False)."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(args) < len(typing.get_args(tp)):
            return args[0], True
        raise TypeError(f"unsupported union in the scenario model: {tp!r}")
    return tp, False


def tuple_item(tp: Any) -> Any | None:
    """`tuple[T, ...]` -> T; None for anything that is not a homogeneous tuple."""
    if typing.get_origin(tp) is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return args[0]
        raise TypeError(f"only tuple[T, ...] is supported in the scenario model, not {tp!r}")
    return None


def mapping_item(tp: Any) -> Any | None:
    """`dict[str, T]` -> T (a mapping of user-chosen names); None for anything else."""
    if typing.get_origin(tp) is dict:
        key, value = typing.get_args(tp)
        if key is not str:
            raise TypeError(f"only dict[str, T] is supported in the scenario model, not {tp!r}")
        return value
    return None


def literal_choices(tp: Any) -> tuple | None:
    """`Literal["a", "b"]` -> ("a", "b"); None for anything else."""
    if typing.get_origin(tp) is Literal:
        return typing.get_args(tp)
    return None


def is_dataclass_type(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def field_choices(cls: type, name: str, metadata: typing.Mapping) -> tuple | None:
    """Valid values of a string field that is not a Literal: metadata `choices`, or a registry."""
    if "choices" in metadata:
        return tuple(metadata["choices"])
    lookup = EXTERNAL_CHOICES.get((cls, name))
    return lookup() if lookup else None


def type_phrase(tp: Any) -> str:
    """What a value of this type looks like, for "expected ..." messages."""
    tp, optional = split_optional(tp)
    if tp is Dist:
        phrase = "a number or a distribution mapping"
    elif is_dataclass_type(tp):
        phrase = "a mapping"
    elif tuple_item(tp) is not None:
        phrase = "a list"
    elif mapping_item(tp) is not None:
        phrase = "a mapping of names"
    elif (choices := literal_choices(tp)) is not None:
        phrase = "one of " + ", ".join(str(c) for c in choices)
    else:
        phrase = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}[tp]
    return phrase + " (or null)" if optional else phrase


# ---------------------------------------------------------------------------------------------
# Key paths and their wording, shared by the loader and `--set`


def join_key(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def join_index(path: str, index: int) -> str:
    return f"{path}[{index}]"


def parent_path(path: str) -> str:
    """`a.b[2].c` -> `a.b[2]` -> `a.b` -> `a` -> ``."""
    cut = max(path.rfind("."), path.rfind("["))
    return path[:cut] if cut > 0 else ""


def place(path: str) -> str:
    """Where a key sits, for messages: `in cluster.nodes[0]` or `at the top level`."""
    return f"in {path}" if path else "at the top level"


def unknown_key_message(key: str, cls: type, path: str) -> str:
    """The message for a key the dataclass does not have, with the closest valid key."""
    valid = list(field_types(cls))
    hint = suggestion(key, valid) or f"; valid keys: {', '.join(valid)}"
    return f"unknown key {key!r} {place(path)}{hint}"


# ---------------------------------------------------------------------------------------------
# JSON Schema


def scenario_json_schema() -> dict:
    """A JSON Schema (draft 2020-12) of scenario files, generated from the dataclasses.

    Each dataclass becomes a `$defs` entry with `additionalProperties: false`; field docs become
    descriptions; metadata bounds become minimum/maximum; Literals and named registries become
    enums; a `Dist` field accepts a bare number as well as a mapping, as the loader does.
    """
    defs: dict[str, dict] = {}
    root = _object_schema(Scenario, defs)
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "$id": "https://kvtui.invalid/schema/scenario.json",
        "title": "kvtui scenario",
        **root,
        "$defs": defs,
    }


def _object_schema(cls: type, defs: dict[str, dict]) -> dict:
    """The schema of one dataclass as an object with its properties."""
    properties = {}
    for name, (field, hint) in field_types(cls).items():
        choices = field_choices(cls, name, field.metadata)
        prop = _type_schema(hint, field.metadata, defs, choices)
        if "doc" in field.metadata:
            prop["description"] = field.metadata["doc"]
        if (cls, name) in PROFILE_NAME_FIELDS:
            prop["examples"] = list(PROFILE_NAME_FIELDS[(cls, name)]())
        default = _json_default(field)
        if default is not dataclasses.MISSING:
            prop["default"] = default
        properties[name] = prop
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    required = [name for name, (field, _) in field_types(cls).items() if _json_default(field) is dataclasses.MISSING]
    if required:
        schema["required"] = required
    if cls.__doc__ and not cls.__doc__.startswith(f"{cls.__name__}("):
        schema["description"] = " ".join(cls.__doc__.split())
    return schema


def _type_schema(
    tp: Any, metadata: typing.Mapping, defs: dict[str, dict], choices: tuple | None = None
) -> dict:
    """The schema of one field type; the field's bounds and choices apply to its leaf values."""
    inner, optional = split_optional(tp)
    if optional:
        return {"anyOf": [_type_schema(inner, metadata, defs, choices), {"type": "null"}]}
    if is_dataclass_type(tp):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {}  # reserve first: guards against recursive models
            defs[tp.__name__] = _object_schema(tp, defs)
        ref = {"$ref": f"#/$defs/{tp.__name__}"}
        if tp is Dist:
            value_bounds = field_types(Dist)["value"][0].metadata
            return {"anyOf": [_number_schema("number", value_bounds), ref]}
        return ref
    if (item := tuple_item(tp)) is not None:
        return {"type": "array", "items": _type_schema(item, metadata, defs)}
    if (item := mapping_item(tp)) is not None:
        return {"type": "object", "additionalProperties": _type_schema(item, {}, defs)}
    if (literal := literal_choices(tp)) is not None:
        return {"enum": list(literal)}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return _number_schema("integer", metadata)
    if tp is float:
        return _number_schema("number", metadata)
    if tp is str:
        return {"type": "string", "enum": list(choices)} if choices else {"type": "string"}
    raise TypeError(f"unsupported type in the scenario model: {tp!r}")


def _number_schema(json_type: str, metadata: typing.Mapping) -> dict:
    schema: dict[str, Any] = {"type": json_type}
    if "min" in metadata:
        schema["minimum"] = metadata["min"]
    if "max" in metadata:
        schema["maximum"] = metadata["max"]
    return schema


def _json_default(field: dataclasses.Field) -> Any:
    """The field's default as plain JSON data, or MISSING when it has none."""
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return dataclasses.MISSING
    return to_plain(value)


def to_plain(value: Any) -> Any:
    """Dataclasses and tuples as dicts and lists: the data a YAML or JSON file would hold."""
    if dataclasses.is_dataclass(value):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [to_plain(v) for v in value]
    return value
