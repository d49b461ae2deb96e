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
from iclab.experiments.specs.builtin import builtin_spec
from iclab.experiments.specs.results import RunRecord
from iclab.experiments.specs.spec import Spec, parse_spec
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


def independent_loss(m: float, d: int, sigma: float) -> float:
    """L*_ind(m) for Sigma_x = Sigma_w = I: Theorem 1's optimal loss continued in m,
    sigma^2 + d (d + 1 + sigma^2) / (m + d + 1 + sigma^2)."""
    return sigma**2 + d * (d + 1 + sigma**2) / (m + d + 1 + sigma**2)


def records(spec: Spec, factor: dict[int, float], n_eff: dict[float, float] | None = None,
            eta_patch: float = 1.0, loss_factor: float = 1.0) -> dict[str, RunRecord]:
    """Records whose eta_hat is factor[seed] (default 1) x the law's eta* and whose
    result.json's eta_star is eta_patch x it (a patched theory); for correlated runs n_eff[rho]
    and a measured test loss of loss_factor x L*_ind(n_eff[rho])."""
    out = {}
    for point in spec.points():
        task = point.config.task
        s2 = 1.0 if task.cov_x is None else float(task.cov_x[0][0])
        eta_star = law_eta(task.n, task.d, task.sigma, MU4[task.x_law], s2)
        eta = factor.get(point.config.run.seed, 1.0) * eta_star
        rho = task.context_correlation
        result: dict[str, Any] = {
            "eta_hat": eta, "eta_star": eta_patch * eta_star,
            "gamma": (eta * np.eye(task.d)).tolist(),
            "gamma_star": (eta_star * np.eye(task.d)).tolist()}
        if rho is not None and n_eff is not None:
            result["n_eff"] = n_eff[rho]
            result["test_loss"] = loss_factor * independent_loss(n_eff[rho], task.d, task.sigma)
        out[point.run_id] = RunRecord(point, result)
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


@pytest.mark.parametrize("patch", [1.02, 0.98])
def test_gap_fails_with_the_law_s_optimum_patched_by_2_percent(patch: float) -> None:
    """eta* of each law off by 2 %: its gap moves by about 0.02, twice the tolerance, and
    every claim fails, the Gaussian law's too; unpatched (the learned eta at the law's
    optimum) they hold."""
    spec = make_spec(GAP)
    assert all(c.holds for c in evaluate_claims(spec, records(spec, {}), ClaimRegistry()))
    claims = evaluate_claims(spec, records(spec, {}, eta_patch=patch), ClaimRegistry())
    assert not any(c.holds for c in claims)


def test_gap_is_one_rule_with_one_tolerance() -> None:
    """|learned gap - law's gap| <= 0.01 and nothing else: 0.009 off holds (laplace's gap is
    -0.103, the learned one -0.094), 0.011 off fails."""
    spec = make_spec(GAP)
    laplace = 26.25 / (23.25 + 6.0) - 1
    for off, holds in ((0.009, True), (0.011, False)):
        factor = (laplace + off + 1) / (laplace + 1)
        claims = evaluate_claims(spec, records(spec, {0: factor, 1: factor}), ClaimRegistry())
        assert claims[2].holds is holds and claims[2].value == pytest.approx(laplace + off)


def test_gap_in_von_oswald_s_setting_is_20_over_33_against_12_over_21() -> None:
    spec = make_spec([{**GAP[0], "group": "vo"}])
    (claim,) = evaluate_claims(spec, records(spec, {0: 1.0}), ClaimRegistry())
    assert law_eta(10, 10, 0.0, 9 / 5, 1 / 12) == pytest.approx(20 / 33)
    assert claim.theory == pytest.approx((20 / 33) / (12 / 21) - 1)  # +6.06%
    assert claim.holds and claim.value == pytest.approx(claim.theory)


N_EFF = [{"section": "Covariates", "kind": "n-eff", "group": "ar1", "tolerance": 0.03}]
THEORY = {0.0: 20.0, 0.25: 18.137, 0.5: 13.712}  # docs/theory.md section 12.4


def test_n_eff_is_the_effective_length_of_the_measured_loss() -> None:
    """The trained model's loss at L*_ind(n_eff) is worth n_eff examples: the value inverts
    the independent closed form, one claim per rho, ordered by rho."""
    spec = make_spec(N_EFF)
    claims = evaluate_claims(spec, records(spec, {}, THEORY), ClaimRegistry())
    assert [c.theory for c in claims] == [13.712, 20.0, 18.137]  # the spec's order
    assert [c.value for c in claims] == pytest.approx([13.712, 20.0, 18.137], rel=1e-9)
    assert all(c.holds for c in claims)
    # a loss 1 % above (d = 5, n = 20: worth about 1.7 % fewer examples) still holds at 3 %
    claims = evaluate_claims(spec, records(spec, {}, THEORY, loss_factor=1.01),
                             ClaimRegistry())
    assert all(c.holds for c in claims) and all(c.value < c.theory for c in claims)
    claims = evaluate_claims(spec, records(spec, {}, THEORY, loss_factor=1.03),
                             ClaimRegistry())
    assert not any(c.holds for c in claims)  # 3 % on the loss: about 5 % on n


@pytest.mark.parametrize("patch", [1.06, 0.94])
def test_n_eff_fails_with_the_theory_patched_by_twice_the_tolerance(patch: float) -> None:
    """The measured loss at the right n_eff; the theory's n_eff off by 6 %: every site
    fails (also at rho = 0, where n_eff = n)."""
    spec = make_spec(N_EFF)
    right = records(spec, {}, THEORY)
    wrong = {run_id: RunRecord(record.point, {**record.result,
                                              "n_eff": patch * record.result["n_eff"]})
             for run_id, record in right.items() if "n_eff" in record.result}
    assert not any(c.holds for c in evaluate_claims(spec, {**right, **wrong}, ClaimRegistry()))


def test_n_eff_needs_correlated_runs() -> None:
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
    overrides = [line for line in text.read_text().splitlines()  # the budgets aside
                 if not line.startswith('"') and "budgets" not in line]
    assert len(overrides) <= 68


def test_n_eff_without_a_finite_theory_is_one_line() -> None:
    spec = make_spec(N_EFF)
    bare = {run_id: RunRecord(record.point, {**record.result, "n_eff": None})
            for run_id, record in records(spec, {}, THEORY).items()}
    with pytest.raises(ConfigError, match="no finite n_eff"):
        evaluate_claims(spec, bare, ClaimRegistry())
