"""The exact WPGD loss and optimum (iclab.studies.sequence.wpgd) against independent
computations: Monte Carlo on the family's own prompts, the core's i.i.d. closed forms, and a
population regression on the features y_i x_q^T x_i."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclab.studies.sequence.family import DriftingLinear
from iclab.studies.sequence.wpgd import wpgd_loss, wpgd_optimum
from iclab.theory.gaussian import eta_star_isotropic, loss_star_isotropic
from iclab.utils.seeding import make_generator


def monte_carlo_loss(omega: np.ndarray, gamma: np.ndarray, sigma: float, rho: float,
                     prompts: int, seed: int) -> tuple[float, float]:
    """Mean and standard error of (x_q^T Gamma sum_i omega_i y_i x_i - y_q)^2 on drawn
    prompts."""
    d, n = gamma.shape[0], omega.shape[0]
    task = DriftingLinear(d, n, sigma, rho)
    batch = task.sample_prompts(prompts, make_generator(seed, "wpgd-mc"), torch.float64)
    g = torch.einsum("i,bi,bid->bd", torch.as_tensor(omega), batch.y, batch.X)
    yhat = torch.einsum("bd,de,be->b", batch.x_q, torch.as_tensor(gamma), g)
    errors = (yhat - batch.y_q).square()
    return float(errors.mean()), float(errors.std()) / math.sqrt(prompts)


@pytest.mark.parametrize("rho", [0.0, 0.6, 0.95, 1.0])
def test_the_loss_of_any_weights_and_preconditioner_is_the_monte_carlo_one(rho: float) -> None:
    """Non-uniform weights, a non-symmetric Gamma: the exact loss within 4 standard errors of
    200,000 prompts."""
    rng = np.random.default_rng(1)
    d, n, sigma = 3, 6, 0.4
    omega = rng.uniform(0.2, 1.5, n)
    gamma = 0.1 * np.eye(d) + 0.05 * rng.standard_normal((d, d))
    exact = wpgd_loss(omega, gamma, sigma, rho)
    mean, se = monte_carlo_loss(omega, gamma, sigma, rho, 200_000, seed=2)
    assert abs(exact - mean) < 4 * se


def test_the_monte_carlo_refutes_a_theory_with_the_wrong_fourth_moment() -> None:
    """A theory that took E[(x^T w)^2 x x^T] = (d + 1) I (the fourth moment of a non-Gaussian
    law, one less than the Gaussian's d + 2) is 4 standard errors off: the check above can
    fail."""
    omega, gamma = np.ones(6), 0.1 * np.eye(3)
    mean, se = monte_carlo_loss(omega, gamma, 0.4, 0.6, 200_000, seed=3)
    patched = wpgd_loss(omega, gamma, 0.4, 0.6) - float(omega @ omega) * float(
        np.sum(gamma * gamma))
    assert abs(wpgd_loss(omega, gamma, 0.4, 0.6) - mean) < 4 * se
    assert abs(patched - mean) > 4 * se


@pytest.mark.parametrize(("d", "n", "sigma"), [(5, 20, 0.5), (3, 7, 0.0), (8, 4, 1.0)])
def test_iid_prompts_give_the_one_layer_lsa_optimum_with_uniform_weights(
        d: int, n: int, sigma: float) -> None:
    optimum = wpgd_optimum(d, n, sigma, 1.0)
    assert optimum.loss == pytest.approx(loss_star_isotropic(n, d, sigma), rel=1e-12)
    assert optimum.lsa_loss == pytest.approx(loss_star_isotropic(n, d, sigma), rel=1e-12)
    assert optimum.eta == pytest.approx(eta_star_isotropic(n, d, sigma), rel=1e-12)
    np.testing.assert_allclose(optimum.omega, np.ones(n), rtol=1e-12)


@pytest.mark.parametrize("rho", [0.3, 0.9, 0.99])
def test_drifting_prompts_put_the_optimum_strictly_below_the_lsa(rho: float) -> None:
    optimum = wpgd_optimum(4, 20, 0.25, rho)
    assert optimum.loss < optimum.lsa_loss - 1e-3
    assert np.all(np.diff(optimum.omega) > 0)     # recent examples weigh more


def test_the_optimum_is_the_population_regression_on_the_gd_features() -> None:
    """Independent route: with Gamma = I the predictor is sum_i c_i phi_i, phi_i =
    y_i x_q^T x_i; least squares on 400,000 drawn prompts gives the best c and its loss,
    which must match L*_wpgd within the fit's sampling error, and c the optimal weights'
    direction."""
    d, n, sigma, rho = 3, 5, 0.3, 0.8
    task = DriftingLinear(d, n, sigma, rho)
    batch = task.sample_prompts(400_000, make_generator(4, "regression"), torch.float64)
    phi = (batch.y[..., None] * batch.X * batch.x_q[:, None]).sum(-1).numpy()   # (B, n)
    target = batch.y_q.numpy()
    half = len(target) // 2
    coef, *_ = np.linalg.lstsq(phi[:half], target[:half], rcond=None)
    errors = (phi[half:] @ coef - target[half:]) ** 2      # held out: no fitting bias
    optimum = wpgd_optimum(d, n, sigma, rho)
    se = float(errors.std()) / math.sqrt(len(errors))
    assert abs(float(errors.mean()) - optimum.loss) < 4 * se + 1e-3
    direction = coef / coef.sum() * n
    np.testing.assert_allclose(direction, optimum.omega, rtol=0.05, atol=0.02)


def test_monte_carlo_of_the_optimal_weights_reproduces_the_optimum() -> None:
    optimum = wpgd_optimum(4, 20, 0.25, 0.9)
    mean, se = monte_carlo_loss(optimum.omega, optimum.eta * np.eye(4), 0.25, 0.9, 200_000, 5)
    assert abs(mean - optimum.loss) < 4 * se
    assert optimum.lsa_loss - mean > 20 * se


def test_no_perturbation_of_the_optimum_does_better() -> None:
    rng = np.random.default_rng(6)
    d, n, sigma, rho = 4, 12, 0.25, 0.85
    optimum = wpgd_optimum(d, n, sigma, rho)
    gamma = optimum.eta * np.eye(d)
    assert wpgd_loss(optimum.omega, gamma, sigma, rho) == pytest.approx(optimum.loss,
                                                                          rel=1e-12)
    for _ in range(200):
        omega = optimum.omega * (1 + 0.05 * rng.standard_normal(n))
        other = gamma + 0.002 * rng.standard_normal((d, d))
        assert wpgd_loss(omega, other, sigma, rho) > optimum.loss


def test_rho_zero_leaves_nothing_to_learn() -> None:
    optimum = wpgd_optimum(3, 5, 0.5, 0.0)
    assert optimum.loss == optimum.lsa_loss == pytest.approx(3.25, rel=1e-15)


def test_one_example_leaves_nothing_to_weight() -> None:
    optimum = wpgd_optimum(3, 1, 0.5, 0.7)
    assert optimum.loss == pytest.approx(optimum.lsa_loss, rel=1e-14)
    assert wpgd_optimum(3, 2, 0.5, 0.7).loss < optimum.lsa_loss
