"""The ``lu-asymptotic`` rules can fail: the convergence claim on synthetic simulations that
follow the theory plus a 1/d finite-size term and the spread between pretraining sets holds,
and fails when the theory is patched by +0.03 or -0.03 (the claim's check itself, with the
theory patched in its module); the kappa-transition rule likewise."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from iclab.experiments.claims.registry import evaluate_claims
from iclab.experiments.registries import Registries
from iclab.experiments.specs.spec import parse_spec
from iclab.studies.asymptotic import claims as kinds
from iclab.studies.asymptotic.errors import AsymptoticErrors, asymptotic_errors
from iclab.studies.asymptotic.rules import converges, extrapolate, ratio_matches
from iclab.studies.asymptotic.simulation import SimulatedErrors, sizes
from iclab.utils.errors import ConfigError

POINTS = [[2.0, 1.0, 4.0, 0.1, 0.5], [2.0, 2.0, "inf", 0.1, 0.2]]
CLAIM = {"section": "Task diversity", "kind": "lu-asymptotic", "measure": "convergence",
         "points": POINTS, "dims": [10, 20], "repeats": [800, 200], "tolerance": 0.014,
         "source": "test"}
SPREAD = {10: 0.08, 20: 0.04}
"""The spread between pretraining sets measured at these points (the larger, e_IDG's; docs/
theory.md 16.5), as the built-in spec's claim sees it."""


def synthetic(point: tuple[float, ...], d: int, repeats: int, seed: int) -> SimulatedErrors:
    """Means over ``repeats`` sets that scatter as the measured spread around the theory plus
    a finite-size term 0.8/d; standard errors over the sets."""
    rng = np.random.default_rng([seed, d])
    theory = asymptotic_errors(*point)
    values = []
    for truth in (theory.e_icl, theory.e_idg):
        sets = truth + 0.8 / d + SPREAD[d] * rng.standard_normal(repeats)
        values += [float(sets.mean()), float(sets.std(ddof=1) / math.sqrt(repeats))]
    n, k, context = sizes(d, *point[:3])
    return SimulatedErrors(d, n, k, context, repeats, *values)


def check(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, shift: float, seed: int,
          claim: dict[str, Any] = CLAIM) -> list[Any]:
    def fake(context: Any, point: Any, d: int, repeats: int, _seed: int,
             _prompts: int, _stderr: float | None = None) -> SimulatedErrors:
        return synthetic(point, d, repeats, seed)

    def patched(*point: float) -> AsymptoticErrors:
        true = asymptotic_errors(*point)
        return AsymptoticErrors(*point, true.e_icl + shift, true.e_idg + shift, true.method)

    monkeypatch.setattr(kinds, "simulated", fake)
    monkeypatch.setattr(kinds, "asymptotic_errors", patched)
    registries = Registries()
    spec = parse_spec({"groups": [{"name": "g", "d": 2, "n": 3}], "claims": [claim]},
                      "t.toml", registries)
    return evaluate_claims(spec, {}, registries.claims, {}, out_dir=tmp_path)


@pytest.mark.parametrize("seed", range(6))
def test_convergence_holds_and_fails_on_a_shifted_theory(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, seed: int) -> None:
    assert all(claim.holds for claim in check(monkeypatch, tmp_path, 0.0, seed))
    for shift in (0.03, -0.03):
        claims = check(monkeypatch, tmp_path, shift, seed)
        assert len(claims) == 2 and not any(claim.holds for claim in claims), shift


def test_a_convergence_claim_holds_only_where_its_simulations_reached_the_stderr_asked_for(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The synthetic sets' standard errors are about 0.08 / sqrt(800) and 0.04 / sqrt(200),
    both 0.0028 (seed 0: 0.0026 to 0.0031): within 0.0035, not within 0.002, whatever the
    theory."""
    within = check(monkeypatch, tmp_path, 0.0, 0, {**CLAIM, "stderr": 0.0035})
    assert all(claim.holds for claim in within)
    assert all("at most 0.0035, the stderr asked for" in claim.metric for claim in within)
    short = check(monkeypatch, tmp_path, 0.0, 0, {**CLAIM, "stderr": 0.002})
    assert not any(claim.holds for claim in short)
    assert all("NOT within 0.002" in claim.metric for claim in short)


def test_extrapolation_is_the_weighted_line() -> None:
    """Exact data on e + b/d: the intercept exactly; two dims: the line through both points,
    its standard error sqrt(4 se_40^2 + se_20^2) for d = 20, 40."""
    estimate, stderr = extrapolate([10, 20, 40], [1.0 + 3 / 10, 1.0 + 3 / 20, 1.0 + 3 / 40],
                                   [0.1, 0.05, 0.02])
    assert estimate == pytest.approx(1.0, abs=1e-12)
    estimate, stderr = extrapolate([20, 40], [1.3, 1.2], [0.003, 0.004])
    assert estimate == pytest.approx(1.1, abs=1e-12)
    assert stderr == pytest.approx(math.sqrt(4 * 0.004**2 + 0.003**2), rel=1e-12)
    with pytest.raises(ConfigError, match="two or more distinct d"):
        extrapolate([20, 20], [1.0, 1.0], [0.1, 0.1])


def test_convergence_rule_edges() -> None:
    """|e_hat - theory| <= tolerance: at the edge holds, just past it fails, both sides."""
    for theory in (1.1 - 0.012 + 1e-12, 1.1 + 0.012 - 1e-12):
        assert converges([20, 40], [1.3, 1.2], [0.003, 0.004], theory, 0.012)[0]
    for theory in (1.1 - 0.0121, 1.1 + 0.0121):
        assert not converges([20, 40], [1.3, 1.2], [0.003, 0.004], theory, 0.012)[0]


def test_ratio_rule_edges() -> None:
    assert ratio_matches(0.45, 0.40, 0.05 + 1e-12) and ratio_matches(0.35, 0.40, 0.05 + 1e-12)
    assert not ratio_matches(0.46, 0.40, 0.05) and not ratio_matches(0.34, 0.40, 0.05)


@pytest.mark.parametrize("change, message", [
    ({"repeats": [1, 1], "dims": [4, 6]}, "repeats must be an integer from 2"),
    ({"repeats": 2, "dims": [4, 6]}, None),
    ({"repeats": [2], "dims": [4, 6]}, "a list of 2"),
    ({"repeats": [4096, 4096], "dims": [150, 200]}, "limit"),
    ({"points": None}, "needs points"),
    ({"stderr": 0.0}, "stderr must be a number from 1e-06 to 1, got 0.0"),
    ({"stderr": 0.003, "measure": "double-descent", "taus": [0.5, 1.0, 2.0], "points": None,
      "repeats": 1}, "stderr applies to measure convergence only, not double-descent"),
    ({"stderr": 0.003, "repeats": 2}, None),
])
def test_convergence_settings_are_checked_at_load(change: dict[str, Any],
                                                  message: str | None) -> None:
    """Before any run of a sweep: at least two pretraining sets per d (the error is their
    spread), a repeat per d, every simulation within its work bound; one line."""
    claim = {key: value for key, value in {**CLAIM, **change}.items() if value is not None}
    table = {"groups": [{"name": "g", "d": 2, "n": 3}], "claims": [claim]}
    if message is None:
        parse_spec(table, "t.toml", Registries())
        return
    with pytest.raises(ConfigError, match=message) as error:
        parse_spec(table, "t.toml", Registries())
    assert "\n" not in str(error.value)
