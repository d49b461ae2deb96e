"""The closed-form optimum of one-layer LSA on linear Gaussian tasks (docs/theory.md section 4):
against Monte Carlo, against each other, and as a stationary point."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.gaussian import (
    eta_star_isotropic,
    gaussian_optimum,
    gd_term_loss,
    loss_star_isotropic,
    second_moment_K,
)
from iclab.utils.seeding import make_generator
from tests.helpers import random_spd

SETTINGS = {  # name -> (Sigma_x, Sigma_w) for d = 3
    "theorem-1": (np.eye(3), np.eye(3)),
    "theorem-2": (random_spd(np.random.default_rng(0), 3),
                  np.linalg.inv(random_spd(np.random.default_rng(0), 3))),
    "ahn": (random_spd(np.random.default_rng(1), 3), np.eye(3)),
}


def moments(task: LinearGaussian, prompts: int, seed: int) -> dict[str, torch.Tensor]:
    """Per-prompt v = X^T y: (N, d), x_q: (N, d), y_q: (N,), float64."""
    batch = task.sample_prompts(prompts, make_generator(seed, "test-gaussian"), torch.float64)
    v = torch.einsum("bnd,bn->bd", batch.X, batch.y)
    return {"v": v, "x_q": batch.x_q, "y_q": batch.y_q}


@pytest.mark.parametrize("name", list(SETTINGS))
def test_loss_star_against_monte_carlo(name: str) -> None:
    cov_x, cov_w = SETTINGS[name]
    n, sigma = 10, 0.5
    optimum = gaussian_optimum(n, sigma, cov_x, cov_w)
    sample = moments(LinearGaussian(3, n, sigma, cov_x, cov_w), 400_000, seed=1)
    yhat = torch.einsum("bi,ij,bj->b", sample["x_q"], torch.as_tensor(optimum.gamma),
                        sample["v"])
    errors = (yhat - sample["y_q"]) ** 2
    mean, stderr = float(errors.mean()), float(errors.std()) / math.sqrt(errors.numel())
    assert abs(mean - optimum.loss) < 3 * stderr
    assert stderr < 0.01 * optimum.loss


@pytest.mark.parametrize("name", list(SETTINGS))
def test_gamma_star_against_monte_carlo_least_squares(name: str) -> None:
    """Least squares of y_q on the features x_q,i v_j over fresh prompts recovers Gamma*,
    each entry within 3 (heteroscedasticity-robust) standard errors."""
    cov_x, cov_w = SETTINGS[name]
    d, n, sigma = 3, 10, 0.5
    gamma_star = gaussian_optimum(n, sigma, cov_x, cov_w).gamma
    sample = moments(LinearGaussian(d, n, sigma, cov_x, cov_w), 400_000, seed=2)
    features = torch.einsum("bi,bj->bij", sample["x_q"], sample["v"]).reshape(-1, d * d)
    gram_inv = torch.linalg.inv(features.T @ features)
    fitted = gram_inv @ (features.T @ sample["y_q"])
    residual = sample["y_q"] - features @ fitted
    meat = (features * residual[:, None] ** 2).T @ features
    stderr = torch.sqrt(torch.diagonal(gram_inv @ meat @ gram_inv))
    z = (fitted - torch.as_tensor(gamma_star).reshape(-1)) / stderr
    assert float(z.abs().max()) < 3
    assert float(stderr.max()) < 0.01 * float(np.abs(gamma_star).max())  # 3% off: z ~ 10


def test_theory_md_check_value() -> None:
    """docs/theory.md: d=4, n=10, sigma=0.5 gives eta* = 0.065574."""
    assert eta_star_isotropic(10, 4, 0.5) == pytest.approx(0.065574, abs=5e-7)
    assert gaussian_optimum(10, 0.5, d=4).eta == pytest.approx(1 / 15.25, rel=1e-14)


@pytest.mark.parametrize("name", list(SETTINGS))
def test_second_moments_against_monte_carlo(name: str) -> None:
    """E[v v^T] = n K and E[v (w . x_q)... ] via E[v y_q x_q^T] = n Sigma_x Sigma_w Sigma_x."""
    cov_x, cov_w = SETTINGS[name]
    n, sigma = 6, 0.8
    sample = moments(LinearGaussian(3, n, sigma, cov_x, cov_w), 300_000, seed=3)
    v = sample["v"]
    outer = torch.einsum("bi,bj->bij", v, v).reshape(v.shape[0], -1)
    expected = n * second_moment_K(n, sigma, cov_x, cov_w).reshape(-1)
    stderr = outer.std(0) / math.sqrt(v.shape[0])
    assert float(((outer.mean(0) - torch.as_tensor(expected)) / stderr).abs().max()) < 3
    cross = torch.einsum("bi,bj,b->bij", v, sample["x_q"], sample["y_q"]).reshape(v.shape[0], -1)
    expected_cross = n * (cov_x @ cov_w @ cov_x).reshape(-1)
    stderr = cross.std(0) / math.sqrt(v.shape[0])
    assert float(((cross.mean(0) - torch.as_tensor(expected_cross)) / stderr).abs().max()) < 3


@pytest.mark.parametrize(("d", "n", "sigma"), [(1, 1, 0.0), (4, 10, 0.5), (7, 33, 2.5)])
def test_theorem_1_closed_forms_agree(d: int, n: int, sigma: float) -> None:
    optimum = gaussian_optimum(n, sigma, d=d)
    eta = 1 / (n + d + 1 + sigma**2)
    assert eta_star_isotropic(n, d, sigma) == pytest.approx(eta, rel=1e-15)
    assert np.allclose(optimum.gamma, eta * np.eye(d), rtol=1e-13, atol=1e-16)
    assert optimum.isotropic
    assert optimum.eta == pytest.approx(eta, rel=1e-13)
    assert optimum.loss == pytest.approx(loss_star_isotropic(n, d, sigma), rel=1e-13)
    assert optimum.loss == pytest.approx(d * (d + 1 + sigma**2) * eta + sigma**2, rel=1e-13)


@pytest.mark.parametrize(("d", "n", "sigma"), [(2, 3, 0.0), (5, 20, 0.7), (8, 40, 1.0)])
def test_theorem_2_is_preconditioned_gd_with_the_same_eta(d: int, n: int, sigma: float) -> None:
    cov = random_spd(np.random.default_rng(d), d)
    optimum = gaussian_optimum(n, sigma, cov, np.linalg.inv(cov))
    eta = eta_star_isotropic(n, d, sigma)
    assert np.allclose(optimum.gamma, eta * np.linalg.inv(cov), rtol=1e-10, atol=0)
    assert not optimum.isotropic
    assert optimum.loss == pytest.approx(loss_star_isotropic(n, d, sigma), rel=1e-12)


@pytest.mark.parametrize(("d", "n", "sigma"), [(2, 3, 0.0), (5, 20, 0.7), (8, 40, 1.0)])
def test_identity_sigma_w_is_ahn_et_al(d: int, n: int, sigma: float) -> None:
    cov = random_spd(np.random.default_rng(10 + d), d)
    optimum = gaussian_optimum(n, sigma, cov, None)
    ahn = np.linalg.inv((n + 1) * cov + (np.trace(cov) + sigma**2) * np.eye(d))
    assert np.allclose(optimum.gamma, ahn, rtol=1e-10, atol=0)
    # not a multiple of Sigma_x^{-1}: the best multiple leaves a clear residual
    inverse = np.linalg.inv(cov)
    scale = np.sum(ahn * inverse) / np.sum(inverse * inverse)
    assert np.linalg.norm(ahn - scale * inverse) > 0.05 * np.linalg.norm(ahn)
    assert not optimum.isotropic


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_optimum_is_a_stationary_minimum_of_gd_term_loss(seed: int) -> None:
    rng = np.random.default_rng(seed)
    d, n, sigma = 4, 12, 0.6
    cov_x, cov_w = random_spd(rng, d), random_spd(rng, d)
    optimum = gaussian_optimum(n, sigma, cov_x, cov_w)
    assert gd_term_loss(optimum.gamma, n, sigma, cov_x, cov_w) == pytest.approx(optimum.loss,
                                                                                 rel=1e-12)
    h = 1e-5
    for _ in range(10):
        direction = rng.normal(size=(d, d))
        plus = gd_term_loss(optimum.gamma + h * direction, n, sigma, cov_x, cov_w)
        minus = gd_term_loss(optimum.gamma - h * direction, n, sigma, cov_x, cov_w)
        slope = (plus - minus) / (2 * h)
        curvature = (plus - 2 * optimum.loss + minus) / h**2
        assert abs(slope) < 1e-6 * curvature
        assert curvature > 0
        # and the exact quadratic: L(G* + E) - L* = n tr(Sigma_x E K E^T)
        K = second_moment_K(n, sigma, cov_x, cov_w)
        exact = n * np.trace(cov_x @ direction @ K @ direction.T)
        assert curvature == pytest.approx(2 * exact, rel=1e-4)


def test_eta_star_shrinks_as_noise_grows() -> None:
    etas = [eta_star_isotropic(20, 5, sigma) for sigma in np.linspace(0, 3, 7)]
    assert all(a > b for a, b in itertools.pairwise(etas))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(-3, 0), sigma=st.floats(allow_nan=True, allow_infinity=True))
def test_refuses_bad_n(n: int, sigma: float) -> None:
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        eta_star_isotropic(n, 3, 0.1)
    if not (math.isfinite(sigma) and sigma >= 0):
        with pytest.raises(ValueError, match="sigma must be a finite number >= 0"):
            loss_star_isotropic(5, 3, sigma)


def test_gaussian_optimum_needs_a_dimension() -> None:
    with pytest.raises(ValueError, match="give d or at least one covariance"):
        gaussian_optimum(5, 0.1)
