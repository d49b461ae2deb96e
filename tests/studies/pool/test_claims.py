"""Task diversity claims (pool-optimum, pool-nuisance) on fabricated records, and the section
in the reproduce specs."""

from __future__ import annotations

from typing import Any

import pytest

from iclab.experiments.claims.registry import ClaimRegistry, evaluate_claims
from iclab.experiments.registries import Registries
from iclab.experiments.specs.builtin import builtin_spec
from iclab.experiments.specs.results import RunRecord
from iclab.experiments.specs.spec import Spec, parse_spec
from iclab.utils.errors import ConfigError


def make_spec(kind: str) -> Spec:
    return parse_spec({
        "defaults": {"d": 3, "n": 10, "sigma": 0.5, "steps": 10},
        "groups": [{"name": "pools", "tasks": [1, 8], "seeds": [0]}],
        "claims": [{"section": "Task diversity", "kind": kind, "group": "pools",
                    "tolerance": 0.02, "source": "docs/theory.md section 15"}],
    }, "t", Registries())


def records(spec: Spec, numbers: dict[int, dict[str, float]]) -> dict[str, RunRecord]:
    """Records with the given result keys per K = tasks."""
    return {point.run_id: RunRecord(point, dict(numbers[point.config.task.tasks]))
            for point in spec.points()}


def check(kind: str, numbers: dict[int, dict[str, Any]]) -> list[bool]:
    spec = make_spec(kind)
    return [claim.holds for claim in evaluate_claims(spec, records(spec, numbers),
                                                     ClaimRegistry())]


def pool(loss: float, star: float, free: float, local: float | None = None,
         se: float = 0.001) -> dict[str, float]:
    return {"test_loss_pool": loss, "test_loss_pool_stderr": se, "loss_star": star,
            "loss_star_nuisance_free": free, "loss_local": star if local is None else local}


def patched(numbers: dict[str, float], factor: float, *keys: str) -> dict[str, float]:
    """The same result with the theory's ``keys`` multiplied by ``factor``."""
    return {key: value * factor if key in keys else value for key, value in numbers.items()}


# Measured sites of the quick set (two seeds each; as K = 1 and K = 8 here): K = 8 and 16 at
# their pool's global optimum, K = 4 in a non-global local minimum 3.9 % above it. The claims
# hold on them at the tolerance 0.02.
AT_GLOBAL = {1: pool(0.8726, 0.8764, 0.9233), 8: pool(1.2505, 1.2509, 1.2887)}
AT_LOCAL = {1: pool(1.0914, 1.0406, 1.1269, 1.0814), 8: pool(0.8726, 0.8764, 0.9233)}


def test_pool_optimum_is_one_relative_band_from_the_global_to_the_local_optimum() -> None:
    assert check("pool-optimum", {1: pool(1.01, 1.0, 1.2), 8: pool(0.981, 1.0, 1.01)}) == [
        True, True]
    # 2.1 % above its local minimum; 2.1 % below the global optimum (the edges: 2 %)
    assert check("pool-optimum", {1: pool(1.021, 1.0, 1.2), 8: pool(0.979, 1.0, 1.01)}) == [
        False, False]
    # a run in a non-global local minimum (0.75 vs 0.67) is at its local minimum
    assert check("pool-optimum", {1: pool(0.76, 0.67, 0.71, 0.753), 8: pool(1, 1, 1)}) == [
        True, True]


@pytest.mark.parametrize("factor", [1.05, 0.95])
def test_pool_optimum_fails_with_the_pool_loss_patched_by_5_percent(factor: float) -> None:
    """The exact pool loss (its global and local minima) off by 5 % = 2.5 x the tolerance
    either way: the claim fails at both sites; unpatched it holds. (At a site in a local
    minimum 3.9 % above the global one the band is that much wider below: there only a pool
    loss patched down fails, tested with the nuisance claim's sites.)"""
    assert check("pool-optimum", AT_GLOBAL) == [True, True]
    wrong = {k: patched(v, factor, "loss_star", "loss_local") for k, v in AT_GLOBAL.items()}
    assert check("pool-optimum", wrong) == [False, False]
    if factor < 1:
        wrong = {k: patched(v, factor, "loss_star", "loss_local") for k, v in AT_LOCAL.items()}
        assert check("pool-optimum", wrong) == [False, False]


def test_pool_nuisance_is_the_learned_gap_against_the_exact_one() -> None:
    # K = 1: gap 0.2, learned 0.188; K = 8: gap 1 %, learned 1 %
    assert check("pool-nuisance", {1: pool(1.01, 1.0, 1.2), 8: pool(1.0, 1.0, 1.01)}) == [
        True, True]
    # a gap the trained model does not use (learned 0); a learned gap 0.11 from the exact one
    assert check("pool-nuisance", {1: pool(1.2, 1.0, 1.2), 8: pool(0.9, 1.0, 1.01)}) == [
        False, False]
    # the gap of the local minimum the weights lie in (0.04 = 1.1269 / 1.0814 - 1), not the
    # global one (0.083): a run at its local minimum holds
    assert check("pool-nuisance", {1: pool(1.0814, 1.0406, 1.1269, 1.0814),
                                   8: pool(1.0, 1.0, 1.01)}) == [True, True]


@pytest.mark.parametrize("factor", [1.05, 0.95])
def test_pool_nuisance_fails_with_the_pool_optimum_patched_by_5_percent(factor: float) -> None:
    """The optimum with nuisance terms (global and local) off by 5 %: its gap below L*_nf
    moves by about 0.05, 2.5 x the tolerance, and the claim fails; unpatched it holds. (L*_nf
    enters the learned gap and the exact one alike: a model trained with nuisance terms
    cannot test it, only the full optimum's margin below it.)"""
    for sites in (AT_GLOBAL, AT_LOCAL):
        assert check("pool-nuisance", sites) == [True, True]
        wrong = {k: patched(v, factor, "loss_star", "loss_local") for k, v in sites.items()}
        assert check("pool-nuisance", wrong) == [False, False]


def test_runs_without_a_pool_are_refused() -> None:
    spec = make_spec("pool-optimum")
    bare = {point.run_id: RunRecord(point, {"test_loss": 1.0}) for point in spec.points()}
    with pytest.raises(ConfigError, match="tasks or task_pool"):
        evaluate_claims(spec, bare, ClaimRegistry())


@pytest.mark.parametrize("name", ["reproduce", "reproduce-quick"])
def test_the_reproduce_specs_have_the_section(name: str) -> None:
    spec = builtin_spec(name, Registries())
    claims = [claim for claim in spec.claims if claim.section == "Task diversity"
              and claim.kind.startswith("pool-")]   # beside Lu et al.'s lu-asymptotic claims
    assert {claim.kind for claim in claims} == {"pool-optimum", "pool-nuisance"}
    assert all("docs/theory.md section" in claim.source and " 15." in claim.source
               for claim in claims)
    tasks = sorted({p.config.task.tasks for p in spec.group("task-diversity").points})
    assert tasks[:4] == [1, 2, 4, 8]


def test_a_spec_takes_a_pool_that_is_not_an_axis() -> None:
    spec = parse_spec({"groups": [{"name": "g", "d": 2, "n": 5, "steps": 2,
                                   "task_pool": [[1.0, 0.5], [0.0, -1.0]]}]},
                      "t", Registries())
    (point,) = spec.points()
    assert point.config.task.task_pool == [[1.0, 0.5], [0.0, -1.0]]
