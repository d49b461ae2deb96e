"""Time budgets of a spec's sections: what each section may cost, declared before the runs.

A spec's ``[budgets]`` table gives, per report section, the CPU seconds its runs may use in
the workers (``runs``: training and evaluation, each run counted in the first section that
reads it), the CPU seconds of its longest run (``longest``) and the seconds its claims,
figures and measurements may take in the driver, one after the other (``driver``, wall
seconds: the driver's work is serial):

    [budgets]
    "Theorem 1" = { runs = 12, longest = 1, driver = 2 }

On a machine of ``cores`` cores the runs, handed to the workers longest first, end within
sum(runs) / cores + (1 - 1/cores) max(longest) (Graham's bound for list scheduling); the
driver's work and the report's fixed cost follow, so the budgets bound a set's wall time before
anything runs (``wall_bound``). A
sweep measures what each section used (``iclab.experiments.report.section_times``, written to
section_times.json) beside its budget. iclab's built-in sets declare a budget for every
section; benchmarks/README.md holds the measured table the budgets are checked against
(tests/experiments/test_section_budgets.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from iclab.utils.errors import ConfigError

REPORT_SECONDS = 15.0
"""The set's fixed cost beside the sections' (reading the spec, starting the workers, reading
the runs back, report.md and .html)."""
KEYS = ("runs", "longest", "driver")


@dataclass(frozen=True)
class SectionBudget:
    """What a section may use: ``runs`` CPU seconds in the workers, at most ``longest`` of
    them in one run, and ``driver`` seconds in the driver."""

    runs: float
    longest: float
    driver: float


def parse_budgets(raw: Any, sections: set[str], source: str) -> dict[str, SectionBudget]:
    """The checked ``[budgets]`` of a spec whose claims name ``sections``; ConfigError (one
    line naming the entry) on a section without claims or a bad number."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: budgets must be a table of section = {{ runs = S, "
                          f"longest = S, driver = S }}")
    out = {}
    for section, value in raw.items():
        where = f"{source}: budgets {section!r}"
        if section not in sections:
            raise ConfigError(f"{where}: no claim of the spec is in that section; sections: "
                              f"{', '.join(sorted(sections))}")
        if not isinstance(value, dict) or set(value) != set(KEYS):
            raise ConfigError(f"{where}: give {{ runs = S, longest = S, driver = S }} "
                              f"(seconds), got {value!r}")
        numbers = {}
        for key in KEYS:
            number = value[key]
            if isinstance(number, bool) or not isinstance(number, int | float) \
                    or not math.isfinite(number) or not 0 <= number <= 1e7:
                raise ConfigError(f"{where}: {key} must be seconds from 0 to 1e7, got "
                                  f"{number!r}")
            numbers[key] = float(number)
        if numbers["longest"] > numbers["runs"]:
            raise ConfigError(f"{where}: longest ({numbers['longest']:g}) cannot pass runs "
                              f"({numbers['runs']:g})")
        out[str(section)] = SectionBudget(**numbers)
    return out


def wall_bound(budgets: Mapping[str, SectionBudget], cores: int) -> float:
    """The wall seconds the budgets allow on ``cores`` cores: the runs shared among the cores
    (Graham's bound), the driver's work one after the other, and the set's fixed cost."""
    runs = sum(budget.runs for budget in budgets.values())
    longest = max((budget.longest for budget in budgets.values()), default=0.0)
    driver = sum(budget.driver for budget in budgets.values())
    return runs / cores + (1 - 1 / cores) * longest + driver + REPORT_SECONDS
