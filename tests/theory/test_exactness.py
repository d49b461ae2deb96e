"""Exact values where they are known: the Bayes risk is exactly 0 with sigma = 0 and n >= d and
never negative; Theorem 1's numbers are the exactly rounded rationals; closed forms print no
-0.0; the theory API refuses covariances that are not positive definite or out of scale."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclab.cli.main import main
from iclab.theory.bayes import MAX_WORK, bayes_risk, bayes_work, check_bayes_prompts
from iclab.theory.gaussian import (
    eta_star_isotropic,
    gaussian_optimum,
    gd_term_loss,
    second_moment_K,
    tidy,
)
from iclab.theory.population import PopulationLoss
from iclab.utils.errors import ConfigError
from tests.helpers import random_spd


@pytest.mark.parametrize(("d", "n"), [(3, 10), (1, 1), (5, 20), (4, 4)])
def test_noiseless_bayes_risk_is_exactly_zero_once_n_reaches_d(d: int, n: int) -> None:
    rng = np.random.default_rng(d * 100 + n)
    risk, stderr = bayes_risk(n, 0.0, random_spd(rng, d), random_spd(rng, d), prompts=100)
    assert (risk, stderr) == (0.0, 0.0)
    assert not math.copysign(1.0, risk) < 0  # +0.0, not -0.0


def test_noiseless_risk_below_d_is_the_unseen_dimensions() -> None:
    """Sigma = I, sigma = 0, n < d: w is known on the row space of X only, so the risk of each
    prompt is tr(I - P) = d - n exactly."""
    risk, stderr = bayes_risk(2, 0.0, np.eye(4), np.eye(4), prompts=500)
    assert risk == pytest.approx(2.0, abs=1e-12) and stderr < 1e-12
    assert bayes_risk(3, 0.0, np.eye(4), np.eye(4), prompts=500)[0] == pytest.approx(1.0,
                                                                                     abs=1e-12)


@pytest.mark.parametrize(("d", "n", "sigma"), [(5, 20, 0.5), (2, 1_000_000, 0.5), (3, 40, 1.0)])
def test_noisy_risk_lies_between_the_noise_and_least_squares(d: int, n: int,
                                                             sigma: float) -> None:
    """With Sigma_x = Sigma_w = I: sigma^2 < L_Bayes <= sigma^2 (1 + d / (n - d - 1)), the
    risk of least squares, which the posterior mean (ridge) beats (within Monte Carlo error)."""
    risk, stderr = bayes_risk(n, sigma, np.eye(d), np.eye(d), prompts=4000)
    least_squares = sigma**2 * (1 + d / (n - d - 1))   # E tr (X^T X)^-1 = d / (n - d - 1)
    assert sigma**2 + 4 * stderr < risk < least_squares + 4 * stderr
    if n > 1000:  # ridge and least squares differ by about sigma^4 d / n^2: equal here
        assert abs(risk - least_squares) < 4 * stderr + 1e-12


def test_the_wishart_draw_matches_drawing_the_prompts() -> None:
    """n >= d: X^T X is drawn by Bartlett's decomposition; here the same Rao-Blackwellised
    risk is averaged over explicitly drawn X (numpy), within 4 standard errors."""
    d, n, sigma = 3, 6, 0.7
    rng = np.random.default_rng(7)
    sx, sw = random_spd(rng, d), random_spd(rng, d)
    risk, stderr = bayes_risk(n, sigma, sx, sw, prompts=40_000, seed=3)
    X = rng.standard_normal((40_000, n, d)) @ np.linalg.cholesky(sx).T
    precision = np.transpose(X, (0, 2, 1)) @ X + sigma**2 * np.linalg.inv(sw)
    values = sigma**2 + sigma**2 * np.einsum("ij,bji->b", sx, np.linalg.inv(precision))
    independent, independent_se = values.mean(), values.std() / math.sqrt(values.size)
    assert abs(risk - independent) < 4 * math.hypot(stderr, independent_se)
    assert math.hypot(stderr, independent_se) < 0.01 * risk


@settings(max_examples=20, deadline=None)
@given(d=st.integers(2, 4), data=st.data(), sigma=st.sampled_from([0.0, 1e-6, 1e-3]),
       seed=st.integers(0, 1000))
def test_the_bayes_risk_is_never_negative(d: int, data: st.DataObject, sigma: float,
                                          seed: int) -> None:
    n = data.draw(st.integers(1, 2 * d))
    rng = np.random.default_rng(seed)
    risk, stderr = bayes_risk(n, sigma, random_spd(rng, d, 0.01), random_spd(rng, d, 0.01),
                              prompts=50, seed=seed)
    assert risk >= 0.0 and stderr >= 0.0
    assert not math.copysign(1.0, risk) < 0
    assert (risk > 0) == (sigma > 0 or n < d)


def test_the_bayes_risk_refuses_work_beyond_its_limit() -> None:
    with pytest.raises(ConfigError, match=r"give prompts at most (\d+) \(0 skips it\)") as error:
        check_bayes_prompts(4096, 5, 0.5, 20_000)
    most = int(str(error.value).split("at most ")[1].split()[0])
    assert bayes_work(4096, 5, 0.5, 20_000) > MAX_WORK >= bayes_work(4096, 5, 0.5, most)
    check_bayes_prompts(4096, 5, 0.5, most)            # the suggested count is accepted
    check_bayes_prompts(4096, 1_000_000, 0.0, 10**9)   # exactly 0: no work at all
    with pytest.raises(ConfigError, match="prompts must be an integer >= 2"):
        check_bayes_prompts(3, 5, 0.5, 1)


@pytest.mark.parametrize(("d", "n", "sigma2"), [(3, 10, 0), (1, 1, 0), (5, 20, 1), (4, 2, 4)])
def test_theorem_1_numbers_are_the_exactly_rounded_rationals(d: int, n: int, sigma2: int) -> None:
    optimum = gaussian_optimum(n, math.sqrt(sigma2), d=d)
    eta = Fraction(1, n + d + 1 + sigma2)
    loss = Fraction(d * (d + 1 + sigma2), n + d + 1 + sigma2) + sigma2
    assert optimum.eta == float(eta) == eta_star_isotropic(n, d, math.sqrt(sigma2))
    assert optimum.loss == float(loss)
    assert np.array_equal(optimum.gamma, float(eta) * np.eye(d)) and optimum.isotropic


def test_diagonal_covariances_give_exact_zeros_off_the_diagonal() -> None:
    sx, sw = np.diag([0.5, 1.0, 3.0]), np.diag([2.0, 0.25, 1.0])
    optimum = gaussian_optimum(7, 0.3, sx, sw)
    off = optimum.gamma[~np.eye(3, dtype=bool)]
    assert np.all(off == 0.0) and not np.any(np.signbit(off))
    K = 8 * sx @ sw @ sx + (np.trace(sx @ sw) + 0.09) * sx      # an explicit inverse
    np.testing.assert_allclose(optimum.gamma, sw @ sx @ np.linalg.inv(K), rtol=1e-13, atol=0)


def test_tidy_zeroes_rounding_only() -> None:
    matrix = np.array([[1.0, -1e-17], [-0.0, 3e-14]])
    cleaned = tidy(matrix)
    assert cleaned[0, 1] == 0.0 and cleaned[1, 0] == 0.0
    assert not np.signbit(cleaned[0, 1]) and not np.signbit(cleaned[1, 0])
    assert cleaned[1, 1] == 3e-14 and cleaned[0, 0] == 1.0   # above rounding: kept


@pytest.mark.parametrize(("name", "matrix", "message"), [
    ("negative definite", -np.eye(2), "positive definite"),
    ("indefinite", np.array([[1.0, 2.0], [2.0, 1.0]]), "positive definite"),
    ("huge", 1e300 * np.eye(2), "between 1e-08 and 1e"),
    ("asymmetric", np.array([[1.0, 0.5], [0.0, 1.0]]), "not symmetric"),
    ("not finite", np.array([[np.nan, 0.0], [0.0, 1.0]]), "non-finite"),
])
def test_the_theory_api_refuses_bad_covariances(name: str, matrix: np.ndarray,
                                                message: str) -> None:
    good = np.array([[2.0, 0.3], [0.3, 1.0]])
    with pytest.raises(ConfigError, match=message):
        gaussian_optimum(5, 0.5, matrix, good)
    with pytest.raises(ConfigError, match=message):
        gaussian_optimum(5, 0.5, good, matrix)
    with pytest.raises(ConfigError, match=message):
        second_moment_K(5, 0.5, matrix, good)
    with pytest.raises(ConfigError, match=message):
        gd_term_loss(np.eye(2), 5, 0.5, good, matrix)
    with pytest.raises(ConfigError, match=message):
        PopulationLoss(5, 0.5, torch.as_tensor(matrix), torch.as_tensor(good))
    # the other side: the good matrices are accepted and every loss is positive
    optimum = gaussian_optimum(5, 0.5, good, good)
    assert optimum.loss > 0
    assert gd_term_loss(optimum.gamma, 5, 0.5, good, good) == pytest.approx(optimum.loss)
    loss = PopulationLoss(5, 0.5, torch.as_tensor(good), torch.as_tensor(good))
    M = torch.cat([torch.as_tensor(optimum.gamma).T, torch.zeros(1, 2, dtype=torch.float64)])
    u = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    assert float(loss(u, M)) == pytest.approx(optimum.loss, rel=1e-12)


def test_the_theory_api_refuses_bad_scalars() -> None:
    for call in (lambda: gaussian_optimum(0, 0.5, d=2), lambda: gaussian_optimum(5, -1, d=2),
                 lambda: gaussian_optimum(5, 0.5, d=0), lambda: eta_star_isotropic(5, 0, 0.1),
                 lambda: gaussian_optimum(5, math.inf, d=2)):
        with pytest.raises(ConfigError):
            call()
    assert gaussian_optimum(5, 0.5, d=2).eta == 1 / 8.25


def theory_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["theory", *argv, "--json"]) == 0
    record: dict[str, object] = json.loads(capsys.readouterr().out)
    return record


@pytest.mark.parametrize(("d", "n", "sigma", "zero"), [
    (3, 10, "0", True), (1, 1, "0", True), (5, 20, "0", True),
    (4, 2, "0", False), (5, 20, "0.5", False), (2, 3, "1", False)])
def test_theory_json_bayes_loss(d: int, n: int, sigma: str, zero: bool,
                                capsys: pytest.CaptureFixture[str]) -> None:
    record = theory_json(["--d", str(d), "--n", str(n), "--sigma", sigma], capsys)
    bayes = record["bayes_loss"]
    assert isinstance(bayes, float)
    if zero:
        assert bayes == 0.0 and record["bayes_loss_stderr"] == 0.0
        assert not math.copysign(1.0, bayes) < 0
    else:
        assert bayes > 0.0
        assert bayes >= float(sigma) ** 2
    assert isinstance(record["loss"], float) and bayes < record["loss"]


def test_theory_table_prints_no_negative_zero(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for argv in (["--d", "4", "--n", "9", "--sigma", "0"],
                 ["--d", "3", "--n", "6", "--sigma", "0.5", "--family", "anisotropic"]):
        assert main(["theory", *argv, "--bayes-prompts", "200"]) == 0
        out = capsys.readouterr().out
        assert "-0.000000" not in out and " 0.000000" in out
