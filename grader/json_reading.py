"""Reading a dataclass back from the JSON that `dataclasses.asdict` and `grader.course.sinks.for_json` made of it.

`read(cls, value, where)` builds `cls` from a decoded JSON value by its type annotations:
str, int, float (an int is accepted), bool, None, StrEnums (by value), `X | None`, `list[X]`,
`tuple[X, ...]`, fixed tuples, `dict[str, X]`, `Any` (taken as it is) and nested dataclasses.
Keys the dataclass does not know are ignored; a field with a default may be absent (it takes
the default); a missing field without one, or a value of the wrong type, raises ValueError
with the field's path (`checks[1].status: ...`)."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from enum import Enum
from typing import Any, TypeVar, Union

T = TypeVar("T")


def _name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _fail(where: str, wanted: str, value: Any) -> ValueError:
    return ValueError(f"{where}: expected {wanted}, found {_name(value)}")


def json_object(data: str | dict[str, Any], what: str) -> dict[str, Any]:
    """`data` decoded where it is JSON text, as an object; ValueError naming `what` otherwise."""
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as error:
            raise ValueError(f"{what}: not JSON ({error})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{what}: not a JSON object")
    return data


def read(cls: type[T], value: Any, where: str,
         overrides: dict[str, Any] | None = None) -> T:
    """`cls` from `value` (a decoded JSON object). `overrides`: field name -> the type to read
    that field as, where the annotation is looser than what is stored (e.g. `Any`)."""
    if not isinstance(value, dict):
        raise _fail(where, "an object", value)
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        path = f"{where}.{f.name}" if where else f.name
        if f.name not in value:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValueError(f"{path}: missing")
            continue
        kind = (overrides or {}).get(f.name, hints[f.name])
        kwargs[f.name] = convert(kind, value[f.name], path)
    return cls(**kwargs)


def convert(kind: Any, value: Any, where: str) -> Any:
    """`value` as the annotation `kind` says (see the module's docstring)."""
    if kind is Any:
        return value
    origin = typing.get_origin(kind)
    args = typing.get_args(kind)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return convert(rest[0], value, where)
        if all(a in (int, float) for a in rest):
            return convert(float, value, where)
        raise TypeError(f"{where}: cannot read a {kind}")  # a bug in a dataclass, not in the JSON
    if kind is type(None):
        if value is not None:
            raise _fail(where, "null", value)
        return None
    if isinstance(kind, type) and issubclass(kind, Enum):
        try:
            return kind(value)
        except ValueError:
            raise ValueError(f"{where}: {value!r} is not one of "
                             f"{', '.join(str(m.value) for m in kind)}") from None
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        return read(kind, value, where)
    if kind is bool:
        if not isinstance(value, bool):
            raise _fail(where, "true or false", value)
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _fail(where, "an integer", value)
        return value
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _fail(where, "a number", value)
        return value
    if kind is str:
        if not isinstance(value, str):
            raise _fail(where, "a string", value)
        return value
    if origin is list or origin is tuple:
        if not isinstance(value, list):
            raise _fail(where, "a list", value)
        if origin is list:
            return [convert(args[0], item, f"{where}[{i}]") for i, item in enumerate(value)]
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(convert(args[0], item, f"{where}[{i}]") for i, item in enumerate(value))
        if len(value) != len(args):
            raise ValueError(f"{where}: expected {len(args)} items, found {len(value)}")
        return tuple(convert(a, item, f"{where}[{i}]") for i, (a, item) in enumerate(zip(args, value)))
    if origin is dict:
        if not isinstance(value, dict):
            raise _fail(where, "an object", value)
        return {key: convert(args[1], item, f"{where}.{key}") for key, item in value.items()}
    raise TypeError(f"{where}: cannot read a {kind}")
