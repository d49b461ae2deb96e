"""Declaring a config field once: type, default, allowed values and help text.

A config section is a frozen dataclass whose fields are made with ``setting``. From those
declarations come the validation messages (``validate``), the command-line options
(``iclab.cli.options``), the spec-file keys and the results CSV columns: a new model's
options appear everywhere without being written again.

    @dataclass(frozen=True)
    class MyOptions:
        width: int = setting(8, "hidden width", minimum=1)
        act: str = setting("relu", "activation", choices=("relu", "tanh"))
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from iclab.utils.errors import ConfigError

REQUIRED: Any = dataclasses.MISSING
"""The default of a field that must be given."""

MAX_INT = 2**62
"""The largest integer any field accepts (beyond it arithmetic on sizes overflows)."""


@dataclass(frozen=True)
class FieldInfo:
    """What ``setting`` records about a field (kept in the dataclass field's metadata).

    kind: "int", "float", "str", "bool" or "matrix" (a nested list, given as a .npy file on
    the command line); nullable: None is allowed (means "the default rule", stated in help);
    minimum / maximum: inclusive bounds, or exclusive ones with ``strict``; choices: the
    allowed strings; omit_default: left out of the config's JSON form while at its default
    (fields added after version 0.1, so older run folders keep their config hash); cli: shown
    as a command-line option; load: for a matrix, (path, d, n) -> the checked matrix read
    from the .npy file given on the command line.
    """

    help: str
    kind: str
    nullable: bool
    minimum: float | None = None
    maximum: float | None = None
    strict: bool = False
    choices: tuple[str, ...] | None = None
    omit_default: bool = False
    cli: bool = True
    load: Callable[[str, int, int], Any] | None = None


def setting(
    default: Any,
    help: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    strict: bool = False,
    choices: tuple[str, ...] | None = None,
    omit_default: bool = False,
    cli: bool = True,
    load: Callable[[str, int, int], Any] | None = None,
) -> Any:
    """A dataclass field with its declaration; the kind is read from the annotation."""
    info = {"minimum": minimum, "maximum": maximum, "strict": strict, "choices": choices,
            "omit_default": omit_default, "cli": cli, "help": help, "load": load}
    return dataclasses.field(default=default, metadata={"iclab": info})


_KINDS = {int: "int", float: "float", str: "str", bool: "bool"}


def _kind_of(annotation: Any) -> tuple[str, bool]:
    """("int" | "float" | "str" | "bool" | "matrix", nullable) from a type annotation."""
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    nullable = False
    if origin in (typing.Union, types.UnionType):
        nullable = type(None) in args
        rest = [a for a in args if a is not type(None)]
        annotation = rest[0] if len(rest) == 1 else annotation
        origin = typing.get_origin(annotation)
    if origin is list:
        return "matrix", nullable
    if annotation in _KINDS:
        return _KINDS[annotation], nullable
    raise TypeError(f"unsupported config field type {annotation!r}")


def field_infos(cls: type) -> Mapping[str, tuple[dataclasses.Field[Any], FieldInfo]]:
    """name -> (dataclass field, its declaration) for every declared field of ``cls``, read
    only. A class's declarations do not change, so they are read once per class (reading the
    type hints took a fifth of the reproduce driver's time, called for every record)."""
    return _field_infos(cls)


@functools.cache
def _field_infos(cls: Any) -> Mapping[str, tuple[dataclasses.Field[Any], FieldInfo]]:
    hints = typing.get_type_hints(cls)
    out: dict[str, tuple[dataclasses.Field[Any], FieldInfo]] = {}
    for f in dataclasses.fields(cls):
        raw = f.metadata.get("iclab")
        if raw is None:
            continue
        kind, nullable = _kind_of(hints[f.name])
        out[f.name] = (f, FieldInfo(kind=kind, nullable=nullable, **raw))
    return types.MappingProxyType(out)


def describe_allowed(info: FieldInfo) -> str:
    """What a field allows, in words: "an integer >= 1", "one of cosine, constant", ..."""
    if info.kind == "bool":
        text = "true or false"
    elif info.kind == "str":
        text = f"one of {', '.join(info.choices)}" if info.choices else "a string"
    elif info.kind == "matrix":
        text = "a (d, d) matrix"
    else:
        text = "an integer" if info.kind == "int" else "a finite number"
        bounds = []

        def show(bound: float) -> str:
            return str(int(bound)) if info.kind == "int" else f"{bound:g}"

        if info.minimum is not None:
            bounds.append(f"{'>' if info.strict else '>='} {show(info.minimum)}")
        if info.maximum is not None:
            bounds.append(f"<= {show(info.maximum)}")
        if bounds:
            text += " " + " and ".join(bounds)
    return text + (" (or unset)" if info.nullable else "")


def check_value(name: str, value: Any, info: FieldInfo) -> None:
    """Raise ConfigError naming ``name``, ``value`` and what is allowed, if not allowed."""
    if value is None:
        if info.nullable:
            return
        raise ConfigError(f"{name} must be {describe_allowed(info)}, got None")
    ok: bool
    if info.kind == "bool":
        ok = isinstance(value, bool)
    elif info.kind == "str":
        ok = isinstance(value, str) and (info.choices is None or value in info.choices)
    elif info.kind == "matrix":
        ok = isinstance(value, list)
    else:
        number_types: tuple[type, ...] = (int,) if info.kind == "int" else (int, float)
        ok = isinstance(value, number_types) and not isinstance(value, bool)
        ok = ok and math.isfinite(value) and abs(value) <= (MAX_INT if info.kind == "int"
                                                             else math.inf)
        if ok and info.minimum is not None:
            ok = value > info.minimum if info.strict else value >= info.minimum
        if ok and info.maximum is not None:
            ok = value <= info.maximum
    if not ok:
        raise ConfigError(f"{name} must be {describe_allowed(info)}, got {value!r}")


def validate(obj: Any) -> None:
    """Check every declared field of the dataclass instance ``obj``."""
    for name, (_, info) in field_infos(type(obj)).items():
        check_value(name, getattr(obj, name), info)


def default_of(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def to_flat(obj: Any) -> dict[str, Any]:
    """The declared fields of ``obj`` as a JSON-ready dict, skipping ``omit_default`` fields
    that are at their default."""
    out: dict[str, Any] = {}
    for name, (f, info) in field_infos(type(obj)).items():
        value = getattr(obj, name)
        if info.omit_default and value == default_of(f):
            continue
        out[name] = value
    return out


def coerce(value: Any, info: FieldInfo) -> Any:
    """An int given for a float field becomes a float (so 0 and 0.0 are one config)."""
    if info.kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def from_flat(cls: type, data: dict[str, Any], required: tuple[str, ...] = ()) -> Any:
    """An instance of ``cls`` from the keys of ``data`` that it declares (others ignored);
    missing keys take their defaults, and ``required`` ones must be present."""
    infos = field_infos(cls)
    for name in required:
        if name not in data:
            raise ConfigError(f"{name} is required")
    values = {name: coerce(data[name], info) for name, (_, info) in infos.items()
              if name in data}
    obj = cls(**values)
    validate(obj)
    return obj
