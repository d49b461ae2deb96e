"""Covariates claims (gaussian-gap, n-eff) on fabricated records, and the Covariates section of
the reproduce specs.

Independent theory: with Sigma_x = s^2 I, Sigma_w = I and iid standardised coordinates of
fourth moment mu4, the loss of Gamma = eta I is E|x_q^T (I - eta S) w|^2 + noise with
S = sum_i x_i x_i^T, and E tr S = n d s^2, E tr S^2 = n d s^4 (mu4 + d - 1 + n - 1), so
eta* = 1/(s^2 (n + d + mu4 - 2) + sigma^2) (mu4 = 3: Theorem 1's 1/(n+d+1+sigma^2))."""

from __future__ import annotations

from importlib import resources
from typing import Any

import numpy as np
import pytest

from iclab.experiments.claims.registry import ClaimRegistry, evaluate_claims
from iclab.experiments.registries import Registries
from iclab.experiments.specs.results import RunRecord
from iclab.experiments.specs.spec import Spec, builtin_spec, parse_spec
from iclab.studies.covariates.claims import gap_holds
from iclab.utils.errors import ConfigError

MU4 = {"gaussian": 3.0, "uniform": 9 / 5, "rademacher": 1.0, "laplace": 6.0}


def law_eta(n: int, d: int, sigma: float, mu4: float, s2: float = 1.0) -> float:
    return 1.0 / (s2 * (n + d + mu4 - 2) + sigma**2)


def make_spec(claims: list[dict[str, Any]]) -> Spec:
    return parse_spec({
        "defaults": {"d": 5, "steps": 10},
        "groups": [
            {"name": "laws", "n": 20, "sigma": 0.5, "seeds": [0, 1],
             "x_law": ["gaussian", "uniform", "laplace"]},
            {"name": "vo", "x_law": "uniform", "d": 10, "n": 10, "sigma": 0.0,
             "cov_x": {"diag": [1 / 12] * 10}},
            {"name": "ar1", "n": 20, "sigma": 0.5, "context_correlation": [0.5, 0.0, 0.25]},
        ],
        "claims": claims,
    }, "t", Registries())


def records(spec: Spec, factor: dict[int, float], n_eff: dict[float, float] | None = None
            ) -> dict[str, RunRecord]:
    """Records whose eta_hat is factor[seed] (default 1) x the law's eta* (result.json's
    eta_star), and n_eff[rho] for correlated runs."""
    out = {}
    for point in spec.points():
        task = point.config.task
        s2 = 1.0 if task.cov_x is None else float(task.cov_x[0][0])
        eta_star = law_eta(task.n, task.d, task.sigma, MU4[task.x_law], s2)
        eta = factor.get(point.config.run.seed, 1.0) * eta_star
        rho = task.context_correlation
        out[point.run_id] = RunRecord(point, {
            "eta_hat": eta, "eta_star": eta_star, "gamma": (eta * np.eye(task.d)).tolist(),
            "gamma_star": (eta_star * np.eye(task.d)).tolist(),
            "n_eff": None if rho is None or n_eff is None else n_eff[rho]})
    return out


GAP = [{"section": "Covariates", "kind": "gaussian-gap", "group": "laws", "tolerance": 0.01,
        "separation": 3}]


def test_gap_is_the_law_s_distance_from_the_gaussian_formula() -> None:
    spec = make_spec(GAP)
    claims = evaluate_claims(spec, records(spec, {0: 1.004, 1: 1.0}), ClaimRegistry())
    # eta_G = 1/(n+d+1+sigma^2) = 1/26.25; the law's eta* = 1/(23 + mu4 + 0.25)
    theory = [26.25 / (23.25 + mu4) - 1 for mu4 in (3.0, 9 / 5, 6.0)]
    assert [c.theory for c in claims] == pytest.approx(theory, abs=1e-12)
    assert theory[1] == pytest.approx(0.0479, abs=1e-4)  # uniform: the Gaussian answer is low
    assert theory[2] == pytest.approx(-0.1026, abs=1e-4)  # laplace: high
    assert [c.value for c in claims] == pytest.approx([1.002 * (t + 1) - 1 for t in theory])
    assert all(c.holds for c in claims)
    assert "x_law=uniform" in claims[1].claim and "x_law" not in claims[0].claim


@pytest.mark.parametrize("factor", [1.012, 0.988])
def test_gap_fails_when_the_learned_eta_is_off_either_way(factor: float) -> None:
    spec = make_spec(GAP)
    claims = evaluate_claims(spec, records(spec, {0: factor, 1: factor}), ClaimRegistry())
    assert not claims[0].holds  # Gaussian law: 1.2% from the formula, tolerance 0.01
    assert not claims[1].holds and not claims[2].holds


def test_gap_needs_a_clear_learned_gap_where_the_theory_has_one() -> None:
    assert gap_holds(0.035, 0.04, 0.01, 3)
    assert not gap_holds(0.029, 0.035, 0.01, 3)  # within tolerance of theory, not clearly off
    assert gap_holds(-0.031, -0.035, 0.01, 3) and not gap_holds(-0.025, -0.031, 0.01, 3)
    assert gap_holds(0.005, 0.0, 0.01, 3) and not gap_holds(0.011, 0.0, 0.01, 3)
    assert gap_holds(0.02, 0.025, 0.01, 3)  # the theory's gap is below 3 x tolerance


def test_gap_in_von_oswald_s_setting_is_20_over_33_against_12_over_21() -> None:
    spec = make_spec([{**GAP[0], "group": "vo"}])
    (claim,) = evaluate_claims(spec, records(spec, {0: 1.0}), ClaimRegistry())
    assert law_eta(10, 10, 0.0, 9 / 5, 1 / 12) == pytest.approx(20 / 33)
    assert claim.theory == pytest.approx((20 / 33) / (12 / 21) - 1)  # +6.06%
    assert claim.holds and claim.value == pytest.approx(claim.theory)


N_EFF = [{"section": "Covariates", "kind": "n-eff", "group": "ar1", "tolerance": 0.05}]


def test_n_eff_equals_n_at_rho_0_and_falls_with_rho() -> None:
    spec = make_spec(N_EFF)
    claims = evaluate_claims(spec, records(spec, {0: 1.0}, {0.0: 20.0, 0.25: 18.1, 0.5: 13.7}),
                             ClaimRegistry())
    assert [c.value for c in claims] == [20.0, 18.1, 13.7]  # ordered by rho
    assert all(c.theory == 20 for c in claims) and all(c.holds for c in claims)
    for at_zero in (21.2, 18.8):  # more than 5% either side of n
        claims = evaluate_claims(spec, records(spec, {0: 1.0},
                                               {0.0: at_zero, 0.25: 17.0, 0.5: 13.7}),
                                 ClaimRegistry())
        assert [c.holds for c in claims] == [False, True, True]
    claims = evaluate_claims(spec, records(spec, {0: 1.0}, {0.0: 20.0, 0.25: 19.5, 0.5: 19.0}),
                             ClaimRegistry())
    assert [c.holds for c in claims] == [True, False, False]  # falls by less than 5%


def test_n_eff_needs_correlated_runs_from_rho_0() -> None:
    with pytest.raises(ConfigError, match=r"group 'laws' .*needs context_correlation"):
        make_spec([{**N_EFF[0], "group": "laws"}])  # refused when the spec is loaded


def test_reproduce_has_a_covariates_section() -> None:
    spec = builtin_spec("reproduce", Registries())
    assert "Covariates" in spec.sections
    kinds = {(c.kind, c.group) for c in spec.claims if c.section == "Covariates"}
    assert kinds == {("gamma", "covariates-laws"), ("gaussian-gap", "covariates-laws"),
                     ("gamma", "covariates-von-oswald"),
                     ("gaussian-gap", "covariates-von-oswald"), ("eta", "covariates-ar1"),
                     ("n-eff", "covariates-ar1")}
    laws = {p.config.task.x_law for p in spec.group("covariates-laws").points}
    assert laws == {"gaussian", "uniform", "rademacher", "laplace", "student-t:10"}
    (vo, *_) = spec.group("covariates-von-oswald").points
    assert (vo.config.task.d, vo.config.task.n, vo.config.task.sigma) == (10, 10, 0.0)
    assert np.allclose(vo.config.task.cov_x, np.eye(10) / 12)
    rhos = {p.config.task.context_correlation for p in spec.group("covariates-ar1").points}
    assert rhos == {0.0, 0.25, 0.5, 0.75}


def test_reproduce_quick_keeps_fewer_covariate_points_in_a_short_file() -> None:
    spec = builtin_spec("reproduce-quick", Registries())
    points = {g: spec.group(g).points for g in
              ("covariates-laws", "covariates-von-oswald", "covariates-ar1")}
    assert [len(p) for p in points.values()] == [2, 1, 2]  # 1 seed each
    assert any(c.section == "Covariates" for c in spec.claims)
    text = resources.files("iclab.experiments.specs").joinpath("reproduce-quick.toml")
    assert len(text.read_text().splitlines()) <= 68
