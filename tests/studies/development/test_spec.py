"""The Development section joins the default set (not the quick one), and the full-study
spec shipped in the study's folder loads, each claim with its source."""

from __future__ import annotations

import tomllib
from pathlib import Path

from iclab.experiments.registries import Registries
from iclab.experiments.specs.builtin import builtin_spec
from iclab.experiments.specs.spec import parse_spec
from iclab.studies.development.study import HERE


def test_the_section_joins_the_default_set_and_leaves_the_quick_one() -> None:
    full, quick = (builtin_spec(name, Registries()) for name in ("reproduce", "reproduce-quick"))
    claims = [c for c in full.claims if c.kind == "development"]
    assert {c.section for c in claims} == {"Development"}
    assert {(c.group, c.options["claim"]) for c in claims} == {
        ("development-low", "closer-to-dmmse"), ("development-high", "closer-to-ridge")}
    assert all(c.source.strip() and c.tolerance == 3 for c in claims)
    budget = full.budgets["Development"]
    assert budget.runs <= 150 and budget.longest <= 60 and budget.driver <= 10
    assert not any(c.section == "Development" for c in quick.claims)
    assert "Development" not in quick.budgets


def test_the_full_study_spec_loads_with_two_seeds_a_pool(tmp_path: Path) -> None:
    path: Path = HERE / "development-full.toml"
    spec = parse_spec(tomllib.loads(path.read_text()), str(path), Registries())
    points = list(spec.points())
    assert sorted({p.config.to_json()["tasks"] for p in points}) == [2 ** k for k in range(1, 9)]
    assert len(points) == 16 and all(p.config.run.checkpoints == 16 for p in points)
    assert {c.options["claim"] for c in spec.claims} == {"closer-to-dmmse", "closer-to-ridge"}
