"""Extra keys a claim kind declares beyond its string options: numbers, lists, choices.

A kind lists them in ``ClaimKind.parameters`` (key -> ``ClaimParameter``); the spec loader
passes each key a claim gives to the parameter's ``check``, which returns the value as the
kind uses it or raises ConfigError with what is allowed ("must be ..., got ..."); the loader
prefixes the claim and the key, so the error is one line naming both. A parameter without a
default is required. The checked values travel in ``ClaimSpec.parameters``.

The checkers below cover the usual cases; any function with the same contract works.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from iclab.utils.errors import ConfigError

Check = Callable[[Any], Any]


@dataclass(frozen=True)
class ClaimParameter:
    """A declared claim key: its help text, its check (raw value -> checked value, or
    ConfigError "must be ..., got ..."), and its default (``required`` when it has none)."""

    help: str
    check: Check
    default: Any = None
    required: bool = False


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float)


def choice(*allowed: str) -> Check:
    """One of ``allowed`` (strings)."""

    def check(value: Any) -> str:
        if not isinstance(value, str) or value not in allowed:
            raise ConfigError(f"must be one of {', '.join(allowed)}; got {value!r}")
        return value

    return check


def integer(low: int, high: int) -> Check:
    """An integer from ``low`` to ``high`` (not a bool, not a float)."""

    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ConfigError(f"must be an integer from {low} to {high}, got {value!r}")
        return value

    return check


def number_list(min_length: int, max_length: int) -> Check:
    """A list of ``min_length`` to ``max_length`` distinct finite numbers, as a tuple of floats
    (whole numbers stay ints)."""

    def check(value: Any) -> tuple[float, ...]:
        if not isinstance(value, list | tuple) or not min_length <= len(value) <= max_length \
                or not all(_is_number(v) and math.isfinite(v) for v in value):
            raise ConfigError(f"must be a list of {min_length} to {max_length} finite numbers, "
                              f"got {value!r}")
        if len({float(v) for v in value}) != len(value):
            raise ConfigError(f"must list distinct numbers, got {value!r}")
        return tuple(value)

    return check


def check_parameters(declared: dict[str, ClaimParameter], raw: dict[str, Any],
                     where: str) -> dict[str, Any]:
    """The checked value of every declared parameter (defaults filled in) from a claim's raw
    table; ConfigError "<where>: <key> must be ..." on a bad or missing value."""
    values: dict[str, Any] = {}
    for key, parameter in declared.items():
        if key not in raw:
            if parameter.required:
                raise ConfigError(f"{where}: {key} is required ({parameter.help})")
            values[key] = parameter.default
            continue
        try:
            values[key] = parameter.check(raw[key])
        except ConfigError as error:
            raise ConfigError(f"{where}: {key} {error}") from None
    return values
