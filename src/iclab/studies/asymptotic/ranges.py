"""The ``lu-asymptotic`` claim's parameters checked against their measure when the spec is
loaded: the grid the measure needs is given, every point it will simulate is in the theory's
range (a negative kappa, a tau of 0), and the repeats fit the dims; not when the claims are
checked, after every run of the sweep is trained."""

from __future__ import annotations

from typing import Any

from iclab.studies.asymptotic.formulas import check_inputs
from iclab.utils.errors import ConfigError

GRIDS = {"convergence": "points", "double-descent": "taus", "kappa-transition": "kappas"}
"""The parameter each measure simulates over."""
MAX_REPEATS = 64


def repeat_counts(raw: Any, count: int) -> list[int]:
    """``repeats`` as one count per simulated d (an integer, or a list cut to ``count``)."""
    values = [raw] * count if isinstance(raw, int) else list(raw)[:count] \
        if isinstance(raw, list | tuple) else []
    if len(values) != count or not all(isinstance(v, int) and not isinstance(v, bool)
                                       and 1 <= v <= MAX_REPEATS for v in values):
        raise ConfigError(f"repeats must be an integer from 1 to {MAX_REPEATS} or a list of "
                          f"{count} of them, got {raw!r}")
    return values


def check_ranges(parameters: dict[str, Any], measure: str) -> None:
    """ConfigError (one line) unless ``measure``'s grid is given, each of its points is in
    the theory's range, the dims are increasing integers >= 2 and the repeats fit them."""
    p, grid = parameters, GRIDS[measure]
    if p.get(grid) is None:
        raise ConfigError(f"measure {measure} needs {grid}")
    if measure == "convergence":
        dims = p["dims"]
        if not all(float(d).is_integer() and d >= 2 for d in dims) or list(dims) != sorted(dims):
            raise ConfigError(f"dims must be increasing integers >= 2, got {list(dims)}")
        repeat_counts(p["repeats"], len(dims))
        return
    repeat_counts(p["repeats"], 1)
    for x in p[grid]:
        point = (x, p["alpha"], p["kappa"], p["rho"], p["lam"]) if measure == "double-descent" \
            else (p["tau"], p["alpha"], x, p["rho"], p["lam"])
        try:
            check_inputs(*(float(v) for v in point))
        except ConfigError as error:
            raise ConfigError(f"{grid}: {str(error).removeprefix('--')}") from None
