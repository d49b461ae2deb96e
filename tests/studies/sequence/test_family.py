"""The drifting-linear family's draws and its Kalman-filter Bayes predictor, against
independent computations: the drift's correlations measured on the prompts, Gaussian
conditioning on the whole prompt at once, and the core's Bayes risk at rho = 1."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclab.studies.sequence.family import DriftingLinear, DriftingOptions, drifting_family
from iclab.studies.sequence.kalman import KalmanPredictor, bayes_risk, kalman_filter
from iclab.theory.bayes import bayes_risk as core_bayes_risk
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator


def test_the_task_drifts_with_correlation_rho_per_step() -> None:
    """E[(y_i x_i)^T (y_q x_q)] = E[w_i^T w_(n+1)] = d rho^(n+1-i) (x independent N(0, I)):
    each within 4 standard errors of 200,000 prompts."""
    d, n, rho = 3, 5, 0.7
    task = DriftingLinear(d, n, 0.3, rho)
    batch = task.sample_prompts(200_000, make_generator(0, "drift"), torch.float64)
    query = batch.y_q[:, None] * batch.x_q                                    # (B, d)
    for i in range(n):
        products = ((batch.y[:, i, None] * batch.X[:, i]) * query).sum(-1)
        se = float(products.std()) / math.sqrt(len(products))
        assert abs(float(products.mean()) - d * rho ** (n - i)) < 4 * se


def test_draws_are_seeded_and_rho_one_is_one_task_per_prompt() -> None:
    task = DriftingLinear(3, 6, 0.0, 1.0)
    a = task.sample_prompts(8, make_generator(1, "p"), torch.float64)
    b = task.sample_prompts(8, make_generator(1, "p"), torch.float64)
    assert torch.equal(a.X, b.X) and torch.equal(a.y_q, b.y_q)
    # noiseless, one w: w solves the first 3 examples exactly and labels the rest
    w = torch.linalg.solve(a.X[:, :3], a.y[:, :3])
    torch.testing.assert_close((a.X * w[:, None]).sum(-1), a.y, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close((a.x_q * w).sum(-1), a.y_q, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("rho", [0.0, 1.0, 0.5])
def test_rho_accepts_the_closed_interval(rho: float) -> None:
    assert drifting_family(2, 3, 0.1, DriftingOptions(rho=rho)).rho == rho


@pytest.mark.parametrize("rho", [-0.01, 1.01, math.nan, True])
def test_rho_refuses_outside_it(rho: float) -> None:
    with pytest.raises(ConfigError, match="rho must be a number in \\[0, 1\\]"):
        DriftingLinear(2, 3, 0.1, rho)


def test_the_kalman_mean_is_the_posterior_of_the_whole_prompt() -> None:
    """Independent route: w = (w_1..w_(n+1)) is jointly Gaussian with covariance
    rho^|i-j| I; conditioning on y = H w + sigma eps in one step gives E[w_(n+1) | y]."""
    d, n, sigma, rho = 2, 4, 0.5, 0.8
    task = DriftingLinear(d, n, sigma, rho)
    batch = task.sample_prompts(16, make_generator(2, "kalman"), torch.float64)
    mean, cov = kalman_filter(batch.X, batch.y, sigma, rho)
    index = np.arange(n + 1)
    prior = np.kron(rho ** np.abs(index[:, None] - index[None, :]), np.eye(d))
    for b in range(16):
        H = np.zeros((n, (n + 1) * d))
        for i in range(n):
            H[i, i * d:(i + 1) * d] = batch.X[b, i].numpy()
        S = H @ prior @ H.T + sigma**2 * np.eye(n)
        gain = prior @ H.T @ np.linalg.inv(S)
        post_mean = gain @ batch.y[b].numpy()
        post_cov = prior - gain @ H @ prior
        np.testing.assert_allclose(mean[b].numpy(), post_mean[n * d:], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(cov[b].numpy(), post_cov[n * d:, n * d:], rtol=1e-9,
                                   atol=1e-12)


def test_at_rho_one_the_bayes_risk_is_the_core_linear_gaussian_one() -> None:
    d, n, sigma = 3, 5, 0.5
    ours, se_ours = bayes_risk(d, n, sigma, 1.0, 40_000, seed=0)
    core, se_core = core_bayes_risk(n, sigma, np.eye(d), np.eye(d), 40_000, seed=1)
    assert abs(ours - core) < 4 * math.hypot(se_ours, se_core)


def test_the_kalman_predictor_attains_the_bayes_risk_and_beats_everything_else() -> None:
    d, n, sigma, rho = 3, 10, 0.25, 0.9
    task = DriftingLinear(d, n, sigma, rho)
    batch = task.sample_prompts(100_000, make_generator(3, "risk"), torch.float64)
    errors = (KalmanPredictor(sigma, rho)(batch.X, batch.y, batch.x_q) - batch.y_q).square()
    risk, se = bayes_risk(d, n, sigma, rho, 100_000, seed=4)
    se_mc = float(errors.std()) / math.sqrt(len(errors))
    assert abs(float(errors.mean()) - risk) < 4 * math.hypot(se, se_mc)
    optimum = task.own_optimum()
    assert optimum.bayes_loss is not None and optimum.bayes_loss < optimum.loss
