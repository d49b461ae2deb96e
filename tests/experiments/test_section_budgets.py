"""Every built-in section declares its time budget, the budgets cover what benchmarks/README.md
measured, and they keep the quick set within 120 s and the default set within 600 s of wall
time on the reference machine (2 cores): declared numbers against a measured table, not a timed
test."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iclab.experiments.registries import Registries
from iclab.experiments.specs.budgets import SectionBudget, parse_budgets, wall_bound
from iclab.experiments.specs.builtin import builtin_spec
from iclab.utils.errors import ConfigError

README = Path(__file__).resolve().parents[2] / "benchmarks" / "README.md"
SETS = {"quick": ("reproduce-quick", 120.0), "default": ("reproduce", 600.0)}
CORES = 2
ROW = re.compile(r"^\| (quick|default) \| ([^|]+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \| "
                 r"([\d.]+) \|")


def measured() -> dict[str, dict[str, SectionBudget]]:
    """set -> section -> (runs CPU s, longest run CPU s, driver s) as measured, from the
    README's table."""
    out: dict[str, dict[str, SectionBudget]] = {"quick": {}, "default": {}}
    for line in README.read_text().splitlines():
        match = ROW.match(line)
        if match:
            out[match[1]][match[2].strip()] = SectionBudget(
                float(match[4]), float(match[5]), float(match[6]))
    return out


@pytest.mark.parametrize("name", sorted(SETS))
def test_every_section_declares_a_budget_that_covers_what_it_used(name: str) -> None:
    spec_name, limit = SETS[name]
    spec = builtin_spec(spec_name, Registries())
    sections = {claim.section for claim in spec.claims}
    assert set(spec.budgets) == sections
    table = measured()[name]
    assert set(table) == sections, "benchmarks/README.md measures every section"
    for section, used in table.items():
        budget = spec.budgets[section]
        assert used.runs <= budget.runs and used.longest <= budget.longest, section
        assert used.driver <= budget.driver, section
    assert wall_bound(spec.budgets, CORES) <= limit


def test_the_bound_fails_a_budget_past_the_limit() -> None:
    fits = {"a": SectionBudget(runs=180.0, longest=10.0, driver=10.0)}
    assert wall_bound(fits, CORES) == pytest.approx(90 + 5 + 10 + 15)  # = 120
    assert wall_bound({**fits, "b": SectionBudget(runs=0.0, longest=0.0, driver=1.0)},
                      CORES) > 120.0
    assert wall_bound({"a": SectionBudget(180.0, 12.0, 10.0)}, CORES) > 120.0  # one long run


def test_bad_budgets_are_one_line() -> None:
    ok = {"runs": 4, "longest": 1, "driver": 2.5}
    for raw, words in (({"X": ok}, "no claim of the spec"),
                       ({"A": {**ok, "runs": -1}}, "runs must be seconds from 0"),
                       ({"A": {**ok, "longest": 5}}, "longest (5) cannot pass runs (4)"),
                       ({"A": {"runs": 1}}, "give { runs = S, longest = S, driver = S }")):
        with pytest.raises(ConfigError, match=re.escape(words)):
            parse_budgets(raw, {"A"}, "s.toml")
    assert parse_budgets({"A": ok}, {"A"}, "s.toml") == {"A": SectionBudget(4.0, 1.0, 2.5)}
