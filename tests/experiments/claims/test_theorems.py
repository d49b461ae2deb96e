"""Claims: verdicts computed from result.json numbers against independently computed theory."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from iclab.experiments.claims.kind import Claim
from iclab.experiments.claims.registry import ClaimRegistry, evaluate_claims
from iclab.experiments.claims.targets import distance_from_multiple
from iclab.experiments.registries import Registries
from iclab.experiments.specs.results import RunRecord
from iclab.experiments.specs.spec import Spec, parse_spec
from iclab.theory.bayes import bayes_risk
from iclab.theory.gaussian import gaussian_optimum
from iclab.theory.sized_mean import SizedMean

S = np.array([[1.25, 0.75], [0.75, 1.25]])
S_INV = np.array([[1.25, -0.75], [-0.75, 1.25]])  # (eigenvalues 2 and 1/2 swap)


def make_spec(claims: list[dict[str, Any]]) -> Spec:
    return parse_spec({
        "defaults": {"d": 2, "steps": 10},
        "covariances": {"S": S.tolist()},
        "groups": [
            {"name": "sig", "seeds": [0, 1], "n": 6, "sigma": [0.0, 1.0]},
            {"name": "pre", "seeds": [0, 1], "n": 4, "sigma": 0.5, "cov_x": "S",
             "cov_w": {"inverse": "S"}},
            {"name": "idw", "seeds": [0], "n": 4, "sigma": 0.5, "cov_x": "S"},
        ],
        "claims": claims,
    }, "t", Registries())


def fake_result(config: Any, gamma: np.ndarray, test_loss: float | None = None) -> dict[str, Any]:
    """A result.json as training writes it, for a model whose Gamma is ``gamma``."""
    task = config.make_task()
    optimum = gaussian_optimum(config.task.n, config.task.sigma, task.sigma_x, task.sigma_w)
    eta = float(np.trace(gamma) / config.task.d)
    return {"eta_hat": eta, "eta_star": optimum.eta, "gamma": gamma.tolist(),
            "gamma_star": optimum.gamma.tolist(),
            "isotropy_err": float(np.linalg.norm(gamma - eta * np.eye(config.task.d))
                                  / np.linalg.norm(gamma)),
            "test_loss": optimum.loss if test_loss is None else test_loss,
            "loss_star": optimum.loss, "wall_seconds": 1.0}


def records_with(spec: Spec, gamma_of: Any) -> dict[str, RunRecord]:
    """Records whose Gamma is gamma_of(config) for every point."""
    return {p.run_id: RunRecord(p, fake_result(p.config, gamma_of(p.config)))
            for p in spec.points()}


def theorem1_eta(n: int, d: int, sigma: float) -> float:
    return 1.0 / (n + d + 1 + sigma**2)


def test_eta_claim_compares_the_seed_mean_with_1_over_n_d_1_sigma2() -> None:
    spec = make_spec([{"section": "Theorem 1", "kind": "eta", "reference": "theorem1",
                       "group": "sig", "tolerance": 0.02}])
    factors = {0: 1.03, 1: 0.99}  # seed 0 three percent high, seed 1 one percent low

    def gamma(config: Any) -> np.ndarray:
        eta = theorem1_eta(config.task.n, 2, config.task.sigma)
        return factors[config.run.seed] * eta * np.eye(2)

    claims = evaluate_claims(spec, records_with(spec, gamma), ClaimRegistry())
    assert [c.theory for c in claims] == pytest.approx([1 / 9, 1 / 10])
    assert [c.value for c in claims] == pytest.approx([1.01 / 9, 1.01 / 10])
    assert all(c.holds for c in claims)  # the mean is 1% off, within 2%
    assert claims[0].claim.startswith("Theorem 1:") and "sigma=0.0" in claims[0].claim
    factors[1] = 1.02  # the mean is now 2.5% off
    assert not any(c.holds for c in evaluate_claims(spec, records_with(spec, gamma),
                                                    ClaimRegistry()))


def test_isotropy_claim_takes_the_worst_run() -> None:
    spec = make_spec([{"kind": "isotropy", "group": "sig", "tolerance": 0.02}])
    skew = {0: 0.0, 1: 0.001}
    records = records_with(spec, lambda c: np.array([[0.1, skew[c.run.seed]], [0.0, 0.1]]))
    (claim,) = evaluate_claims(spec, records, ClaimRegistry())
    expected = 0.001 / np.linalg.norm([0.1, 0.001, 0.1])
    assert claim.value == pytest.approx(expected)
    assert claim.theory == 0.0 and claim.holds


def test_theorem2_gamma_against_eta_star_times_inverse_sigma() -> None:
    spec = make_spec([{"section": "Theorem 2", "kind": "gamma", "target": "preconditioned",
                       "group": "pre", "tolerance": 0.02}])
    eta = theorem1_eta(4, 2, 0.5)
    scale = {0: 1.0, 1: 1.015}
    (claim,) = evaluate_claims(spec, records_with(spec, lambda c: scale[c.run.seed] * eta * S_INV),
                               ClaimRegistry())
    assert claim.value == pytest.approx(0.015)
    assert claim.holds
    # the closed form agrees: Gamma* = eta* S^-1 for Sigma_x = S, Sigma_w = S^-1
    np.testing.assert_allclose(gaussian_optimum(4, 0.5, S, S_INV).gamma, eta * S_INV,
                               rtol=1e-12)
    scale[1] = 1.03
    assert not evaluate_claims(spec, records_with(spec, lambda c: scale[c.run.seed] * eta * S_INV),
                               ClaimRegistry())[0].holds


def test_sigma_w_identity_matches_its_optimum_and_not_a_multiple_of_inverse_sigma() -> None:
    spec = make_spec([{"kind": "gamma", "target": "optimum", "group": "idw", "tolerance": 0.02},
                      {"kind": "not-multiple", "of": "inverse-cov-x", "group": "idw",
                       "tolerance": 0.02}])
    optimum = np.linalg.inv(5 * S + (np.trace(S) + 0.25) * np.eye(2))  # ((n+1)S + (trS+s^2)I)^-1
    match, apart = evaluate_claims(spec, records_with(spec, lambda c: optimum), ClaimRegistry())
    assert match.value == pytest.approx(0.0, abs=1e-12) and match.holds
    c = np.sum(optimum * S_INV) / np.sum(S_INV * S_INV)
    distance = np.linalg.norm(optimum - c * S_INV) / np.linalg.norm(optimum)
    assert apart.value == pytest.approx(distance) and apart.theory == pytest.approx(distance)
    assert apart.holds == (distance >= 5 * 0.02)
    # a model that learned a multiple of S^-1 instead fails both claims
    match, apart = evaluate_claims(spec, records_with(spec, lambda c: 0.1 * S_INV), ClaimRegistry())
    assert not match.holds and not apart.holds and apart.value == pytest.approx(0, abs=1e-12)


def test_distance_from_multiple() -> None:
    assert distance_from_multiple(3 * S, S) == pytest.approx(0.0, abs=1e-15)
    assert distance_from_multiple(np.diag([1.0, 0.0]), np.eye(2)) == pytest.approx(np.sqrt(0.5))


def test_loss_claims_against_l_star_and_the_bayes_risk() -> None:
    spec = make_spec([{"section": "Context", "kind": "test-loss", "group": "idw",
                       "tolerance": 0.02},
                      {"section": "Context", "kind": "above-bayes", "group": "idw",
                       "tolerance": 0.02}])
    point = spec.points()[-1]
    loss_star = gaussian_optimum(4, 0.5, S, None).loss
    records = {p.run_id: RunRecord(p, fake_result(p.config, np.eye(2), 1.01 * loss_star))
               for p in spec.points()}
    loss, bayes = evaluate_claims(spec, records, ClaimRegistry())
    assert loss.value == pytest.approx(1.01 * loss_star) and loss.theory == loss_star
    assert loss.holds
    risk, risk_se = bayes_risk(4, 0.5, S, np.eye(2), prompts=200_000, seed=5)
    # drawn to a standard error of a tenth of the tolerance (0.2 %) of the risk, or less
    assert abs(bayes.theory - risk) < 4 * math.hypot(risk_se, 0.002 * risk)
    assert abs(bayes.theory - risk) > 0  # its own draws, not the fixed count's
    assert "standard error" in bayes.metric and "prompts" in bayes.metric
    assert bayes.holds == (1.01 * loss_star >= 1.1 * bayes.theory)
    assert point.config.task.n == 4


def test_above_bayes_does_not_hold_where_the_bayes_risk_missed_its_standard_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A Bayes risk whose draws hit their bound before the standard error asked for: the
    claim does not hold, however far the loss is above it, and says why."""
    import iclab.experiments.claims.theorems as theorems

    asked: list[float] = []

    def short(n: int, sigma: float, sigma_x: Any, sigma_w: Any, relative: float,
              seed: int) -> SizedMean:
        asked.append(relative)
        return SizedMean(0.30, 0.01, 2000, relative * 0.30, False)

    monkeypatch.setattr(theorems, "bayes_risk_to_stderr", short)
    spec = make_spec([{"section": "Context", "kind": "above-bayes", "group": "idw",
                       "tolerance": 0.02}])
    records = {p.run_id: RunRecord(p, fake_result(p.config, np.eye(2), 3.0))
               for p in spec.points()}
    (bayes,) = evaluate_claims(spec, records, ClaimRegistry())
    assert asked == [pytest.approx(0.002)]  # a tenth of the tolerance, relative
    assert not bayes.holds and "NOT within 0.1 x tolerance" in bayes.metric


def test_claims_json_objects_have_exactly_the_issue_s_keys() -> None:
    claim = Claim("Theorem 1: x", True, "m", 1.0, 1.0, 0.02, "Theorem 1", "g", "")
    assert set(claim.to_json()) == {"claim", "holds", "metric", "value", "theory", "tolerance",
                                    "source"}


def test_eta_against_the_optimum_reads_eta_star_and_its_monte_carlo_error() -> None:
    spec = make_spec([{"section": "Theorem 3", "kind": "eta", "group": "sig",
                       "tolerance": 0.02}])
    recs = records_with(spec, lambda c: 0.05 * np.eye(2))
    for record in recs.values():  # as a family whose optimum is estimated by Monte Carlo
        record.result.update(eta_star=0.0505, eta_star_stderr=1e-4)
    claims = evaluate_claims(spec, recs, ClaimRegistry())
    assert [c.theory for c in claims] == [0.0505, 0.0505]
    assert all(c.value == pytest.approx(0.05) and c.holds for c in claims)
    assert "standard error 0.0001" in claims[0].metric
