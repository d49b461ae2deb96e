"""Declarative experiment specs: a TOML (or JSON) file of groups of runs and the claims on them.

Schema (every key but ``groups`` is optional)::

    name = "my-sweep"                 # used in the report's title
    description = "..."               # a paragraph for the report
    [defaults]                        # TrainConfig fields shared by every group
    d = 5
    steps = 500
    [covariances]                     # named covariance expressions (see below)
    S = [[2.0, 0.5], [0.5, 1.0]]
    [sections]                        # report section name -> explanatory paragraph
    "Theorem 1" = "..."
    [budgets]                         # section -> CPU seconds of its runs and of the driver
    "Theorem 1" = { runs = 12, driver = 2 }   # (budgets, section_times.json)
    [[groups]]                        # one group = a grid of runs
    name = "theorem1-sigma"           # lower-case letters, digits, '-'
    seeds = [0, 1]                    # default [0]
    n = 10                            # any TrainConfig field; a list is a swept axis
    sigma = [0.0, 0.5, 1.0]
    cov_x = "S"                       # covariance expression; never an axis
    x_law = ["gaussian", "uniform"]   # the linear family's covariate law (an axis here)
    context_covariance = "R"          # (n+1, n+1) expression, like cov_x; never an axis
    task_pool = [[1.0, 0.5]]          # a (K, d) task pool (linear-gaussian); never an axis
    [[claims]]                        # a verdict computed from a group's results
    section = "Theorem 1"
    kind = "eta"                      # see iclab.experiments.claims.theorems
    group = "theorem1-sigma"
    tolerance = 0.02
    source = "Mahankali et al., Theorem 1"  # where the claim comes from (shown, in claims.json)
    reference = "theorem1"            # kind-specific option
    [[claims]]                        # a kind may declare parameters of any type
    kind = "shift"
    group = "my-group"
    shift = "x-scale"
    values = [0.5, 1, 2, 4]
    measure = "ratio-grows"
    tolerance = 1000
    [[measurements]]                  # numbers shown without a verdict (measurement_spec)
    section = "Shift"
    groups = ["my-group", "other"]
    shift = "w-scale"
    values = [0.5, 1, 2, 4]

A group expands to the Cartesian product of its list-valued fields (in the order written),
each point once per seed. Covariance expressions: absent or null (identity), a name from
``[covariances]``, a (d, d) nested list, ``{diag = [...]}``, or ``{inverse = EXPR}``.
``context_covariance`` (the linear family's position covariance) takes the same expressions.
Every point becomes a TrainConfig, validated when the spec is loaded, and a run folder named
by the hash of that config; a config reached by several groups is one run.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from iclab.experiments.specs.budgets import SectionBudget, parse_budgets
from iclab.experiments.specs.claim_fit import check_claims_fit
from iclab.experiments.specs.claim_spec import ClaimSpec, SpecRegistries, parse_claim
from iclab.experiments.specs.groups import (
    MAX_POINTS,
    GroupSpec,
    Point,
    expand_group,
    fail,
)
from iclab.experiments.specs.measurement_spec import MeasurementSpec, parse_measurements

_SPEC_KEYS = ("name", "description", "defaults", "covariances", "sections", "budgets", "groups",
              "claims",
              "measurements")


@dataclass(frozen=True)
class Spec:
    """A loaded, validated spec."""

    name: str
    description: str
    source: str
    groups: tuple[GroupSpec, ...]
    claims: tuple[ClaimSpec, ...]
    sections: dict[str, str]
    measurements: tuple[MeasurementSpec, ...] = ()
    budgets: dict[str, SectionBudget] = field(default_factory=dict)
    """Section -> the CPU seconds it may use (``iclab.experiments.specs.budgets``)."""

    def points(self) -> list[Point]:
        """Every distinct run once, in spec order, each listing all groups it belongs to."""
        order: dict[str, Point] = {}
        for group in self.groups:
            for point in group.points:
                known = order.get(point.run_id)
                if known is None:
                    order[point.run_id] = point
                elif group.name not in known.groups:
                    order[point.run_id] = replace(known, groups=(*known.groups, group.name))
        return list(order.values())

    def group(self, name: str) -> GroupSpec:
        for group in self.groups:
            if group.name == name:
                return group
        raise KeyError(name)




def _table(data: dict[str, Any], key: str, source: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise fail(source, f"{key} must be a table")
    return value


def parse_spec(data: Any, source: str, registries: SpecRegistries) -> Spec:
    """Validate a spec's data (already parsed from TOML or JSON) and expand its groups; the
    models and claim kinds it may name are those of ``registries`` (the command's: built-ins
    and plug-ins; a plug-in a group names joins ``registries.models``)."""
    if not isinstance(data, dict):
        raise fail(source, "a spec must be a table at the top level")
    unknown = sorted(set(data) - set(_SPEC_KEYS))
    if unknown:
        raise fail(source, f"unknown keys {unknown}; allowed: {list(_SPEC_KEYS)}")
    defaults, named = _table(data, "defaults", source), _table(data, "covariances", source)
    sections = _table(data, "sections", source)
    if "seed" in defaults:
        raise fail(source, "defaults: give seeds in each group (seeds = [...]), not seed")
    raw_groups = data.get("groups")
    if not isinstance(raw_groups, list) or not raw_groups:
        raise fail(source, "groups must be a non-empty list of tables ([[groups]])")
    groups: list[GroupSpec] = []
    for index, raw_group in enumerate(raw_groups):
        budget = MAX_POINTS - sum(len(group.points) for group in groups)
        groups.append(expand_group(raw_group, index, defaults, named, source,
                                    registries.models, registries.families, budget))
    names = [g.name for g in groups]
    if len(set(names)) != len(names):
        raise fail(source, f"group names repeat: {names}")
    raw_claims = data.get("claims", [])
    if not isinstance(raw_claims, list):
        raise fail(source, "claims must be a list of tables ([[claims]])")
    claims = [parse_claim(c, i, set(names), source, registries.claims)
              for i, c in enumerate(raw_claims)]
    check_claims_fit(claims, groups, registries.claims, source)  # before any run
    measurements = parse_measurements(data.get("measurements", []), set(names), source,
                                      registries.claims)
    budgets = parse_budgets(data.get("budgets", {}), {c.section for c in claims}, source)
    return Spec(name=str(data.get("name", Path(source).stem)),
                description=str(data.get("description", "")), source=source,
                groups=tuple(groups), claims=tuple(claims),
                sections={str(k): str(v) for k, v in sections.items()},
                measurements=measurements, budgets=budgets)
