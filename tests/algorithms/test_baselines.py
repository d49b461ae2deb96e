"""The reference in-context algorithms: zero, OLS, ridge, the Bayes posterior mean, k-step GD."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclab.algorithms.baselines import (
    BayesPosteriorMean,
    KStepGD,
    LeastSquares,
    Ridge,
    ZeroPredictor,
)
from iclab.algorithms.gd import OneStepGD
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from tests.helpers import random_spd


def regression(batch: int, n: int, d: int, sigma: float, seed: int
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """X: (B, n, d), y = X w + noise: (B, n), and the true w: (B, d), float64."""
    generator = torch.Generator().manual_seed(seed)
    X = torch.randn(batch, n, d, generator=generator, dtype=torch.float64)
    w = torch.randn(batch, d, generator=generator, dtype=torch.float64)
    y = torch.einsum("bnd,bd->bn", X, w) + sigma * torch.randn(batch, n, generator=generator,
                                                               dtype=torch.float64)
    return X, y, w


@pytest.mark.parametrize(("n", "d"), [(3, 3), (10, 4), (50, 7)])
def test_ols_recovers_w_without_noise(n: int, d: int) -> None:
    X, y, w = regression(64, n, d, 0.0, seed=n)
    assert torch.allclose(LeastSquares().fit(X, y), w, rtol=0, atol=1e-9)
    task = LinearGaussian(d, n, 0.0, random_spd(np.random.default_rng(d), d))
    prompts = task.sample_prompts(256, make_generator(0, "ols"), torch.float64)
    yhat = LeastSquares()(prompts.X, prompts.y, prompts.x_q)
    assert torch.allclose(yhat, prompts.y_q, rtol=0, atol=1e-8)


def test_ols_is_the_minimum_norm_interpolant_below_d() -> None:
    X, y, _ = regression(16, 3, 6, 0.0, seed=5)
    w_hat = LeastSquares().fit(X, y)
    assert torch.allclose(torch.einsum("bnd,bd->bn", X, w_hat), y, atol=1e-10)
    # minimum norm: w_hat lies in the row space of X
    projector = torch.linalg.pinv(X) @ X
    assert torch.allclose((projector @ w_hat[..., None]).squeeze(-1), w_hat, atol=1e-10)


@pytest.mark.parametrize("lam", [0.0, 0.3, 5.0])
def test_ridge_against_numpy_solve(lam: float) -> None:
    X, y, _ = regression(8, 12, 4, 0.5, seed=1)
    w_hat = Ridge(lam).fit(X, y).numpy()
    for b in range(8):
        Xb, yb = X[b].numpy(), y[b].numpy()
        expected = np.linalg.solve(Xb.T @ Xb + lam * np.eye(4), Xb.T @ yb)
        assert np.allclose(w_hat[b], expected, rtol=1e-12, atol=1e-14)


def test_ridge_with_a_matrix_penalty_against_numpy_solve() -> None:
    X, y, _ = regression(8, 12, 4, 0.5, seed=2)
    penalty = random_spd(np.random.default_rng(2), 4)
    w_hat = Ridge(penalty=penalty).fit(X, y).numpy()
    for b in range(8):
        Xb, yb = X[b].numpy(), y[b].numpy()
        assert np.allclose(w_hat[b], np.linalg.solve(Xb.T @ Xb + penalty, Xb.T @ yb),
                           rtol=1e-12, atol=1e-14)


def paired_risks(task: LinearGaussian, algorithms: dict[str, object], prompts: int
                 ) -> dict[str, torch.Tensor]:
    batch = task.sample_prompts(prompts, make_generator(0, "risks"), torch.float64)
    return {name: (algorithm(batch.X, batch.y, batch.x_q) - batch.y_q) ** 2  # type: ignore[operator]
            for name, algorithm in algorithms.items()}


@pytest.mark.parametrize("isotropic_w", [True, False])
def test_bayes_posterior_mean_beats_every_ridge(isotropic_w: bool) -> None:
    """On the same prompts the posterior mean's risk is below every ridge's, by clearly more
    than the paired standard error for lambdas away from sigma^2 (Sigma_w = I)."""
    d, n, sigma = 5, 10, 0.5
    rng = np.random.default_rng(4)
    cov_x = random_spd(rng, d)
    cov_w = np.eye(d) if isotropic_w else np.diag([4.0, 2.0, 1.0, 0.5, 0.25])
    task = LinearGaussian(d, n, sigma, cov_x, cov_w)
    lambdas = [0.0, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0]
    algorithms: dict[str, object] = {"bayes": BayesPosteriorMean(sigma, cov_w)}
    algorithms.update({f"ridge{lam}": Ridge(lam) for lam in lambdas})
    risks = paired_risks(task, algorithms, 50_000)
    for lam in lambdas:
        difference = risks[f"ridge{lam}"] - risks["bayes"]
        stderr = float(difference.std()) / math.sqrt(difference.numel())
        assert float(difference.mean()) >= -3 * stderr
        if not (isotropic_w and lam == sigma**2):
            assert float(difference.mean()) > 3 * stderr
    if isotropic_w:  # with Sigma_w = I the posterior mean is ridge(sigma^2) exactly
        assert torch.allclose(risks["bayes"], risks[f"ridge{sigma**2}"], rtol=1e-10)


def test_bayes_without_noise_is_ols_when_n_at_least_d() -> None:
    task = LinearGaussian(4, 9, 0.0, random_spd(np.random.default_rng(0), 4),
                          random_spd(np.random.default_rng(1), 4))
    prompts = task.sample_prompts(128, make_generator(0, "bayes0"), torch.float64)
    bayes = BayesPosteriorMean(0.0, task.sigma_w).fit(prompts.X, prompts.y)
    assert torch.allclose(bayes, LeastSquares().fit(prompts.X, prompts.y), atol=1e-9)


def test_bayes_without_noise_interpolates_in_the_prior_metric_below_d() -> None:
    """n < d, sigma = 0: the posterior mean is the limit of ridge(sigma^2 Sigma_w^{-1})."""
    d, n = 6, 3
    cov_w = random_spd(np.random.default_rng(7), d)
    X, y, _ = regression(16, n, d, 0.0, seed=7)
    exact = BayesPosteriorMean(0.0, cov_w).fit(X, y)
    for b in range(16):  # Sigma_w X^T (X Sigma_w X^T)^{-1} y
        Xb = X[b].numpy()
        expected = cov_w @ Xb.T @ np.linalg.solve(Xb @ cov_w @ Xb.T, y[b].numpy())
        assert np.allclose(exact[b].numpy(), expected, rtol=1e-9, atol=1e-12)
    limit = BayesPosteriorMean(1e-4, cov_w).fit(X, y)  # the error is O(sigma^2)
    assert torch.allclose(exact, limit, rtol=0, atol=1e-6)
    assert torch.allclose(torch.einsum("bnd,bd->bn", X, exact), y, atol=1e-10)


def test_one_step_of_k_step_gd_is_one_step_gd() -> None:
    X, y, _ = regression(32, 15, 5, 0.3, seed=3)
    x_q = torch.randn(32, 5, dtype=torch.float64)
    eta = 0.04
    assert torch.equal(KStepGD(eta, 1).fit(X, y), OneStepGD(eta).fit(X, y))
    assert torch.allclose(KStepGD(eta, 1)(X, y, x_q), OneStepGD(eta)(X, y, x_q), rtol=1e-15)


def test_k_step_gd_converges_to_ols() -> None:
    """Below 2 / lambda_max(X^T X), GD on the prompt's least squares converges to OLS."""
    X, y, _ = regression(16, 20, 4, 0.3, seed=4)
    eta = 1.0 / float(torch.linalg.eigvalsh(X.transpose(1, 2) @ X).max())
    assert torch.allclose(KStepGD(eta, 3000).fit(X, y), LeastSquares().fit(X, y), atol=1e-9)
    # and k steps from 0 equal the closed form sum_{j<k} (I - eta S)^j eta X^T y
    S = X.transpose(1, 2) @ X
    Xty = torch.einsum("bnd,bn->bd", X, y)
    step = torch.eye(4, dtype=torch.float64) - eta * S
    expected = eta * (torch.eye(4, dtype=torch.float64) + step + step @ step) @ Xty[..., None]
    assert torch.allclose(KStepGD(eta, 3).fit(X, y), expected.squeeze(-1), rtol=1e-12)


def test_zero_predictor() -> None:
    X, y, _ = regression(4, 3, 2, 0.1, seed=0)
    assert torch.equal(ZeroPredictor()(X, y, X[:, 0]), torch.zeros(4, dtype=torch.float64))


@settings(max_examples=30, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_ridge_refuses_bad_lambda(lam: float) -> None:
    if math.isfinite(lam) and lam >= 0:
        assert Ridge(lam).lam == lam
    else:
        with pytest.raises(ConfigError, match="ridge lambda must be a finite number >= 0"):
            Ridge(lam)


@settings(max_examples=30, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True).filter(lambda x: not 1e6 < abs(x) < math.inf))
def test_bayes_refuses_bad_sigma(sigma: float) -> None:
    if math.isfinite(sigma) and sigma >= 0:
        assert BayesPosteriorMean(sigma, d=2).sigma == sigma
    else:
        with pytest.raises(ConfigError, match="sigma must be a finite number >= 0"):
            BayesPosteriorMean(sigma, d=2)


def test_bayes_refuses_bad_prior() -> None:
    with pytest.raises(ConfigError, match="give sigma_w or d"):
        BayesPosteriorMean(0.1)
    with pytest.raises(ConfigError, match="shape"):
        BayesPosteriorMean(0.1, np.eye(3), d=2)
    with pytest.raises(ConfigError, match="positive definite"):
        BayesPosteriorMean(0.1, np.diag([1.0, -1.0]))


@settings(max_examples=30, deadline=None)
@given(st.integers(-5, 0), st.floats(allow_nan=True, allow_infinity=True))
def test_k_step_gd_refuses_bad_options(steps: int, eta: float) -> None:
    with pytest.raises(ConfigError, match="steps must be >= 1"):
        KStepGD(0.1, steps)
    if not math.isfinite(eta):
        with pytest.raises(ConfigError, match="eta must be a finite number"):
            KStepGD(eta, 3)
