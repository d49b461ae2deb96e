"""Correlated contexts: the Isserlis closed form against Monte Carlo, n_eff, reductions."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclab.studies.covariates.correlated import (
    correlated_loss,
    correlated_optimum,
    effective_context_length,
    independent_loss_star,
    isotropic_correlated_optimum,
)
from iclab.studies.covariates.linear_law import LinearLawTask, ar1_position_covariance
from iclab.studies.covariates.optimum import covariate_optimum
from iclab.theory.gaussian import (
    eta_star_isotropic,
    gaussian_optimum,
    gd_term_loss,
    loss_star_isotropic,
)
from iclab.theory.span import span_optimum
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from tests.helpers import random_spd
from tests.theory.gamma_fit import fit_gamma, gd_features, mc_loss

SX = np.array([[1.5, 0.6, 0.0], [0.6, 1.0, -0.3], [0.0, -0.3, 0.5]])
SW = np.array([[0.8, 0.2, 0.1], [0.2, 1.2, 0.0], [0.1, 0.0, 0.6]])


@given(st.integers(0, 10_000), st.integers(1, 4), st.integers(1, 30), st.floats(0.0, 2.0))
def test_independent_positions_give_the_gaussian_optimum(seed: int, d: int, n: int,
                                                         sigma: float) -> None:
    rng = np.random.default_rng(seed)
    sigma_x, sigma_w = random_spd(rng, d), random_spd(rng, d)
    ours = correlated_optimum(np.eye(n + 1), sigma, sigma_x, sigma_w)
    reference = gaussian_optimum(n, sigma, sigma_x, sigma_w)
    scale = float(np.max(np.abs(reference.gamma)))
    assert float(np.max(np.abs(ours.gamma - reference.gamma))) <= 1e-11 * scale
    assert ours.loss == pytest.approx(reference.loss, rel=1e-12)
    assert ours.independent_loss == pytest.approx(reference.loss, rel=1e-12)
    assert ours.n_eff == pytest.approx(n, rel=1e-8)


@given(st.integers(0, 10_000), st.integers(1, 4), st.integers(1, 20))
def test_loss_of_any_gamma_without_correlation_is_the_gaussian_one(seed: int, d: int,
                                                                   n: int) -> None:
    rng = np.random.default_rng(seed)
    sigma_x, sigma_w = random_spd(rng, d), random_spd(rng, d)
    gamma = rng.normal(size=(d, d)) / (n + d)
    ours = correlated_loss(gamma, np.eye(n + 1), 0.7, sigma_x, sigma_w)
    assert ours == pytest.approx(gd_term_loss(gamma, n, 0.7, sigma_x, sigma_w), rel=1e-11)


@pytest.mark.parametrize("rho", [0.3, 0.6, -0.5])
def test_loss_of_a_random_gamma_matches_monte_carlo(rho: float) -> None:
    n, sigma = 6, 0.7
    task = LinearLawTask(3, n, sigma, SX, SW, rho=rho)
    perturbation = np.random.default_rng(3).normal(size=(3, 3)) * 0.02
    gamma = gaussian_optimum(n, sigma, SX, SW).gamma + perturbation
    exact = correlated_loss(gamma, task.position_covariance, sigma, SX, SW)
    loss, se = mc_loss(task, gamma, 150_000, seed=1)
    assert abs(loss - exact) <= 4 * se
    # two-sided: the independent-example formula is rejected
    assert abs(loss - gd_term_loss(gamma, n, sigma, SX, SW)) > 4 * se


def test_loss_under_a_general_position_covariance_matches_monte_carlo() -> None:
    n, sigma = 5, 0.4
    rng = np.random.default_rng(4)
    R = random_spd(rng, n + 1, ridge=0.5)
    task = LinearLawTask(3, n, sigma, SX, SW, position_cov=R)
    optimum = correlated_optimum(R, sigma, SX, SW)
    for gamma in (optimum.gamma, rng.normal(size=(3, 3)) * 0.05):
        loss, se = mc_loss(task, gamma, 150_000, seed=2)
        assert abs(loss - correlated_loss(gamma, R, sigma, SX, SW)) <= 4 * se
    assert correlated_loss(optimum.gamma, R, sigma, SX, SW) == pytest.approx(optimum.loss,
                                                                             rel=1e-12)


def test_optimum_matches_a_least_squares_fit_on_correlated_prompts() -> None:
    n, sigma, rho = 5, 0.5, 0.7
    task = LinearLawTask(3, n, sigma, SX, SW, rho=rho)
    optimum = covariate_optimum(task)
    assert optimum.method == "closed-form" and optimum.n_eff is not None
    fitted, se = fit_gamma(task, 150_000, seed=3)
    assert np.all(np.abs(fitted - optimum.gamma) <= 4 * se), (fitted, optimum.gamma, se)
    independent = gaussian_optimum(n, sigma, SX, SW).gamma
    assert np.any(np.abs(fitted - independent) > 4 * se)


def test_span_certificate_for_correlated_contexts() -> None:
    task = LinearLawTask(2, 4, 0.5, SX[:2, :2], SW[:2, :2], rho=0.6)
    optimum = correlated_optimum(task.position_covariance, 0.5, SX[:2, :2], SW[:2, :2])
    span = span_optimum(task, fit_prompts=120_000, test_prompts=20_000, seed=5)
    assert np.all(np.abs(span.gamma - optimum.gamma) <= 4 * span.gamma_stderr)
    # the fitted nuisance shares are estimation noise (about 1e-3 here, falling as 1/prompts)
    assert span.nuisance["x_x"] < 5e-3 and span.nuisance["y_y"] < 5e-3
    p = task.sample_prompts(100_000, make_generator(6, "paired"), torch.float64)
    closed = gd_features(p) @ torch.as_tensor(optimum.gamma).reshape(-1)
    difference = (span.predict(p) - p.y_q) ** 2 - (closed - p.y_q) ** 2
    mean, se = float(difference.mean()), float(difference.std()) / math.sqrt(len(difference))
    assert -4 * se <= mean <= 4 * se + 3 * span.estimation_excess


@pytest.mark.parametrize("rho", [0.0, 0.25, 0.5, 0.9])
def test_isotropic_closed_form_agrees_with_the_matrix_solution(rho: float) -> None:
    d, n, sigma = 5, 20, 0.5
    R = ar1_position_covariance(n, rho)
    g, loss = isotropic_correlated_optimum(R, d, sigma)
    optimum = correlated_optimum(R, sigma, d=d)
    assert optimum.isotropic and optimum.eta == pytest.approx(g, rel=1e-12)
    assert optimum.loss == pytest.approx(loss, rel=1e-12)
    # Sigma_x = s^2 I, Sigma_w = I: omega = s^2, Gamma* = (g / s^2) I
    g2, loss2 = isotropic_correlated_optimum(R, d, sigma, omega=2.5)
    scaled = correlated_optimum(R, sigma, 2.5 * np.eye(d), np.eye(d))
    assert scaled.eta == pytest.approx(g2 / 2.5, rel=1e-12)
    assert scaled.loss == pytest.approx(loss2, rel=1e-12)


def test_theorem2_shape_survives_correlation() -> None:
    """Sigma_w = Sigma_x^{-1}: W = I, so Gamma* = g Sigma_x^{-1} with the isotropic g."""
    R = ar1_position_covariance(8, 0.5)
    optimum = correlated_optimum(R, 0.3, SX, np.linalg.inv(SX))
    g, loss = isotropic_correlated_optimum(R, 3, 0.3)
    np.testing.assert_allclose(optimum.gamma, g * np.linalg.inv(SX), rtol=1e-10, atol=1e-13)
    assert optimum.loss == pytest.approx(loss, rel=1e-12)


def test_theory_docs_example_and_must_show_numbers() -> None:
    """d = 5, n = 20, sigma = 0.5, AR(1) rho = 0.5: L* = 1.814 against 1.440, n_eff about 14."""
    d, n, sigma = 5, 20, 0.5
    task = LinearLawTask(d, n, sigma, rho=0.5)
    optimum = covariate_optimum(task)
    assert optimum.loss == pytest.approx(1.814, abs=2e-3)
    assert optimum.independent_loss == pytest.approx(1.440, abs=1e-3)
    assert optimum.n_eff is not None and 13.0 < optimum.n_eff < 15.0
    assert optimum.isotropic and optimum.eta is not None
    loss, se = mc_loss(task, optimum.gamma, 100_000, seed=7)
    assert abs(loss - optimum.loss) <= 4 * se
    assert abs(loss - optimum.independent_loss) > 4 * se


def test_rho_zero_gives_theorem1_and_n_eff_n() -> None:
    d, n, sigma = 5, 20, 0.5
    optimum = covariate_optimum(LinearLawTask(d, n, sigma, rho=0.0))
    assert optimum.eta == pytest.approx(eta_star_isotropic(n, d, sigma), rel=1e-12)
    assert optimum.loss == pytest.approx(loss_star_isotropic(n, d, sigma), rel=1e-12)
    assert optimum.n_eff == pytest.approx(20.0, rel=1e-9)


@pytest.mark.parametrize("rho", [0.25, 0.5, 0.9])
def test_n_eff_inverts_theorem1_loss(rho: float) -> None:
    """Theorem 1's L*(m) = d (d+1+s^2) / (m+d+1+s^2) + s^2 inverted by hand."""
    d, n, sigma = 5, 20, 0.5
    optimum = correlated_optimum(ar1_position_covariance(n, rho), sigma, d=d)
    c = d + 1 + sigma**2
    expected = d * c / (optimum.loss - sigma**2) - c
    assert optimum.n_eff == pytest.approx(expected, rel=1e-9)
    assert 0 < optimum.n_eff < n


def test_n_eff_decreases_with_correlation_and_handles_the_ends() -> None:
    d, n, sigma = 5, 20, 0.5
    values = [correlated_optimum(ar1_position_covariance(n, rho), sigma, d=d).n_eff
              for rho in (0.0, 0.25, 0.5, 0.9)]
    assert all(a > b for a, b in itertools.pairwise(values))
    eye = np.eye(d)
    assert effective_context_length(independent_loss_star(0.0, sigma, eye, eye) + 0.1, sigma,
                                    eye, eye) == 0.0
    assert effective_context_length(sigma**2, sigma, eye, eye) == np.inf
    m = effective_context_length(independent_loss_star(3.7, sigma, SX, SW), sigma, SX, SW)
    assert m == pytest.approx(3.7, rel=1e-9)


def test_monte_carlo_is_refused_for_correlated_contexts() -> None:
    with pytest.raises(ConfigError, match="closed-form"):
        covariate_optimum(LinearLawTask(2, 3, 0.5, rho=0.5), monte_carlo=True)


@given(st.integers(0, 10_000), st.floats(0.05, 5.0))
def test_non_positive_definite_position_covariance_is_refused(seed: int, shift: float) -> None:
    R = random_spd(np.random.default_rng(seed), 5)
    bad = R - (float(np.linalg.eigvalsh(R)[0]) + shift) * np.eye(5)
    with pytest.raises(ConfigError, match="position covariance"):
        correlated_optimum(bad, 0.5, d=2)
    with pytest.raises(ConfigError, match="position covariance"):
        correlated_loss(np.eye(2), bad, 0.5)


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ConfigError):
        correlated_optimum(np.eye(1), 0.5, d=2)
    with pytest.raises(ConfigError):
        correlated_optimum(np.ones((2, 3)), 0.5, d=2)
    with pytest.raises(ConfigError):
        correlated_optimum(np.eye(3), -1.0, d=2)
    with pytest.raises(ConfigError):
        correlated_optimum(np.eye(3), 0.5)
