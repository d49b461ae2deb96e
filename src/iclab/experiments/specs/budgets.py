"""Time budgets of a spec's sections: what each section may cost, declared before the runs.

A spec's ``[budgets]`` table gives, per report section, the CPU seconds its runs may use in
the workers (``runs``: training and evaluation, each run counted in the first section that
reads it) and the seconds its claims, figures and measurements may take in the driver, one
after the other (``driver``, wall seconds: the driver's work is serial):

    [budgets]
    "Theorem 1" = { runs = 12, driver = 2 }

On a machine of ``cores`` cores a set's wall time is about sum(runs) / cores + sum(driver) +
the report's fixed cost, so the budgets bound it before anything runs (``wall_bound``). A
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

REPORT_SECONDS = 10.0
"""The report's fixed cost beside the sections' (reading the runs, report.md and .html)."""


@dataclass(frozen=True)
class SectionBudget:
    """What a section may use: ``runs`` CPU seconds in the workers, ``driver`` seconds in the
    driver."""

    runs: float
    driver: float


def parse_budgets(raw: Any, sections: set[str], source: str) -> dict[str, SectionBudget]:
    """The checked ``[budgets]`` of a spec whose claims name ``sections``; ConfigError (one
    line naming the entry) on a section without claims or a bad number."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: budgets must be a table of section = {{ runs = S, "
                          f"driver = S }}")
    out = {}
    for section, value in raw.items():
        where = f"{source}: budgets {section!r}"
        if section not in sections:
            raise ConfigError(f"{where}: no claim of the spec is in that section; sections: "
                              f"{', '.join(sorted(sections))}")
        if not isinstance(value, dict) or set(value) != {"runs", "driver"}:
            raise ConfigError(f"{where}: give {{ runs = S, driver = S }} (seconds), got "
                              f"{value!r}")
        numbers = {}
        for key in ("runs", "driver"):
            number = value[key]
            if isinstance(number, bool) or not isinstance(number, int | float) \
                    or not math.isfinite(number) or not 0 <= number <= 1e7:
                raise ConfigError(f"{where}: {key} must be seconds from 0 to 1e7, got "
                                  f"{number!r}")
            numbers[key] = float(number)
        out[str(section)] = SectionBudget(**numbers)
    return out


def wall_bound(budgets: Mapping[str, SectionBudget], cores: int) -> float:
    """The wall seconds the budgets allow on ``cores`` cores: the runs shared among the cores,
    the driver's work one after the other, and the report's fixed cost."""
    runs = sum(budget.runs for budget in budgets.values())
    driver = sum(budget.driver for budget in budgets.values())
    return runs / cores + driver + REPORT_SECONDS
