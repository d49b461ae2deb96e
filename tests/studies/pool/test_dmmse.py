"""dMMSE against the posterior mean computed from the product of Gaussian densities, and
against the other predictors on prompts of its own law."""

from __future__ import annotations

import numpy as np
import torch

from iclab.algorithms.baselines import BayesPosteriorMean
from iclab.studies.pool.dmmse import PoolPosteriorMean
from iclab.studies.pool.family import with_pool
from iclab.tasks.linear_gaussian import LinearGaussian


def test_posterior_mean_matches_the_density_product() -> None:
    rng = np.random.default_rng(0)
    pool, sigma = rng.standard_normal((4, 2)), 0.7
    X, y = rng.standard_normal((3, 5, 2)), rng.standard_normal((3, 5))
    fitted = PoolPosteriorMean(pool, sigma).fit(torch.as_tensor(X), torch.as_tensor(y))
    for b in range(3):
        density = np.array([np.prod(np.exp(-(y[b] - X[b] @ w) ** 2 / (2 * sigma**2))
                                    / np.sqrt(2 * np.pi * sigma**2)) for w in pool])
        expected = density @ pool / density.sum()
        np.testing.assert_allclose(fitted[b].numpy(), expected, rtol=1e-10)


def test_noiseless_posterior_finds_the_task() -> None:
    pool = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    X = torch.randn(6, 4, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    y = X @ torch.as_tensor(pool[2])
    fitted = PoolPosteriorMean(pool, 0.0).fit(X, y)
    np.testing.assert_allclose(fitted.numpy(), np.tile(pool[2], (6, 1)), atol=1e-12)


def test_dmmse_beats_ridge_on_its_own_law() -> None:
    pool = np.random.default_rng(1).standard_normal((3, 3))
    family = with_pool(LinearGaussian(3, 4, 0.5), None, pool, 0)
    batch = family.sample_prompts(20_000, torch.Generator().manual_seed(3), torch.float64)
    dmmse = (PoolPosteriorMean(pool, 0.5)(batch.X, batch.y, batch.x_q) - batch.y_q) ** 2
    ridge = (BayesPosteriorMean(0.5, d=3)(batch.X, batch.y, batch.x_q) - batch.y_q) ** 2
    difference = ridge - dmmse
    assert float(difference.mean()) > 4 * float(difference.std() / np.sqrt(len(difference)))
