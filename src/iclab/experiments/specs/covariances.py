"""Covariance expressions in spec files, resolved to matrices with a short label.

An expression is null (the identity), a name defined in the spec's ``[covariances]`` table, a
(d, d) nested list, ``{diag = [...]}`` or ``{inverse = EXPR}``. Positive definiteness is
checked later, by TrainConfig, with the group's name in the message.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from iclab.utils.errors import ConfigError


def _fail(where: str, message: str) -> ConfigError:
    return ConfigError(f"{where}: {message}")


def _matrix(value: Any, where: str) -> np.ndarray:
    ok = isinstance(value, list) and value and all(isinstance(row, list) for row in value)
    rows = value if ok else []
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for r in rows for x in r)
    if not ok or not numbers or len({len(row) for row in rows}) != 1:
        raise _fail(where, "a covariance matrix must be a nested list of numbers, one per row")
    return np.asarray(value, dtype=np.float64)


def resolve_covariance(
    value: Any, named: dict[str, Any], where: str, depth: int = 0
) -> tuple[np.ndarray | None, str]:
    """(matrix or None for the identity, a short label) of a covariance expression."""
    if depth > 8:
        raise _fail(where, "covariance expressions nest too deeply (a name refers to itself?)")
    if value is None:
        return None, "I"
    if isinstance(value, str):
        if value not in named:
            raise _fail(where, f"unknown covariance {value!r}; defined: {sorted(named) or 'none'}")
        matrix, _ = resolve_covariance(named[value], named, f"covariances.{value}", depth + 1)
        return matrix, value
    if isinstance(value, list):
        return _matrix(value, where), "matrix"
    if isinstance(value, dict) and len(value) == 1:
        (key, inner), = value.items()
        if key == "diag":
            if not isinstance(inner, list) or not all(
                    isinstance(x, int | float) and not isinstance(x, bool) for x in inner):
                raise _fail(where, "diag must be a list of numbers")
            return np.diag(np.asarray(inner, dtype=np.float64)), "diag"
        if key == "inverse":
            matrix, label = resolve_covariance(inner, named, where, depth + 1)
            if matrix is None:
                return None, "I"
            try:
                inverse = np.linalg.inv(matrix)
            except np.linalg.LinAlgError:
                raise _fail(where, f"covariance {label} is singular, it has no inverse") from None
            return (inverse + inverse.T) / 2, f"inverse({label})"
    raise _fail(where, "a covariance is null, a name, a nested list, {diag = [...]} or "
                       f"{{inverse = ...}}; got {value!r}")
