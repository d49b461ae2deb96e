"""The exact pool loss against Monte Carlo, and its optimum against an independent global
optimisation (Gauss-Hermite quadrature over the query, joint L-BFGS on (u, M) from random
starts)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from iclab.studies.pool.loss import PoolLoss
from iclab.studies.pool.optimum import pool_optimum


def monte_carlo_loss(pool: np.ndarray, u: np.ndarray, M: np.ndarray, n: int, sigma: float,
                     chol_x: np.ndarray, prompts: int, seed: int) -> tuple[float, float]:
    """Mean and standard error of (u^T Z M x_q - y_q)^2 over whole prompts, w uniform on the
    pool."""
    rng = np.random.default_rng(seed)
    K, d = pool.shape
    w = pool[rng.integers(0, K, prompts)]                                 # (P, d)
    x = rng.standard_normal((prompts, n + 1, d)) @ chol_x.T               # (P, n+1, d)
    y = np.einsum("pnd,pd->pn", x, w) + sigma * rng.standard_normal((prompts, n + 1))
    tokens = np.concatenate([x[:, :n], y[:, :n, None]], axis=2)           # (P, n, d+1)
    Z = np.einsum("pia,pib->pab", tokens, tokens)
    yhat = np.einsum("a,pab,bc,pc->p", u, Z, M, x[:, n])
    errors = (yhat - y[:, n]) ** 2
    return float(errors.mean()), float(errors.std(ddof=1) / np.sqrt(prompts))


@pytest.mark.parametrize("K, seed", [(1, 0), (3, 1), (5, 2)])
def test_pool_loss_matches_monte_carlo(K: int, seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    d, n, sigma = 2, 6, 0.5
    pool = rng.standard_normal((K, d))
    root = rng.standard_normal((d, d))
    sigma_x = root @ root.T / d + 0.5 * np.eye(d)
    u, M = 0.3 * rng.standard_normal(d + 1), 0.3 * rng.standard_normal((d + 1, d))
    exact = float(PoolLoss(pool, n, sigma, sigma_x)(torch.as_tensor(u), torch.as_tensor(M)))
    mean, se = monte_carlo_loss(pool, u, M, n, sigma, np.linalg.cholesky(sigma_x), 200_000,
                                seed)
    assert abs(exact - mean) <= 4 * se


def quadrature_loss(params: torch.Tensor, pool: np.ndarray, n: int, sigma: float
                    ) -> torch.Tensor:
    """The pool loss for x ~ N(0, I), written apart from iclab's: for each task and each
    Gauss-Hermite node x_q (3 a coordinate: exact for the degree-4 polynomial in x_q), the
    first and second moments of yhat = sum_i (u.e_i)(e_i.m) from those of one token
    e ~ N(0, C), then the mean squared error. params: u then M, row by row."""
    K, d = pool.shape
    u, M = params[: d + 1], params[d + 1 :].reshape(d + 1, d)
    nodes, weights = np.polynomial.hermite_e.hermegauss(3)
    grid = np.array(list(itertools.product(range(3), repeat=d)))
    x_q = torch.as_tensor(nodes[grid])                                  # (Q, d)
    weight = torch.as_tensor(np.prod(weights[grid], axis=1) / weights.sum() ** d)
    total = torch.zeros((), dtype=torch.float64)
    for w_np in pool:
        w = torch.as_tensor(w_np)
        C = torch.eye(d + 1, dtype=torch.float64)
        C[:d, d] = C[d, :d] = w
        C[d, d] = w @ w + sigma**2
        m = x_q @ M.T                                                   # (Q, d+1)
        one = m @ (C @ u)                                               # E[(u.e)(e.m)]
        fourth = (u @ C @ u) * ((m @ C) * m).sum(1) + 2 * one**2        # E[(u.e)^2 (e.m)^2]
        second = n * fourth + n * (n - 1) * one**2                      # E[yhat^2]
        target = x_q @ w
        total = total + (weight * (second - 2 * n * one * target + target**2)).sum()
    return total / K + sigma**2


def independent_optimum(pool: np.ndarray, n: int, sigma: float, starts: int) -> float:
    """The best loss that L-BFGS on all (u, M) jointly reaches from random starts."""
    d = pool.shape[1]
    generator = torch.Generator().manual_seed(7)
    best = np.inf
    for index in range(starts):
        scale = (0.05, 0.3, 1.0)[index % 3]
        params = (scale * torch.randn((d + 1) * (d + 1), generator=generator,
                                      dtype=torch.float64)).requires_grad_(True)
        optimiser = torch.optim.LBFGS([params], max_iter=2000, tolerance_grad=1e-12,
                                      tolerance_change=1e-15, line_search_fn="strong_wolfe")

        def closure(optimiser: torch.optim.LBFGS = optimiser,
                    params: torch.Tensor = params) -> torch.Tensor:
            optimiser.zero_grad()
            value = quadrature_loss(params, pool, n, sigma)
            value.backward()
            return value

        optimiser.step(closure)
        best = min(best, float(quadrature_loss(params.detach(), pool, n, sigma)))
    return best


@pytest.mark.parametrize("K, seed", [(1, 11), pytest.param(2, 12, marks=pytest.mark.slow),
                                     pytest.param(3, 13, marks=pytest.mark.slow)])
def test_optimum_agrees_with_an_independent_global_search(K: int, seed: int) -> None:
    pool = np.random.default_rng(seed).standard_normal((K, 2))
    n, sigma = 5, 0.5
    optimum = pool_optimum(PoolLoss(pool, n, sigma))
    independent = independent_optimum(pool, n, sigma, starts=12)
    assert abs(optimum.loss / independent - 1) <= 1e-4
    # its reported weights attain it under the independent loss
    params = torch.as_tensor(np.concatenate([optimum.u, optimum.M.ravel()]))
    assert abs(float(quadrature_loss(params, pool, n, sigma)) / optimum.loss - 1) <= 1e-9


@pytest.mark.parametrize("K", [1, 2])
def test_small_pools_use_the_nuisance_terms(K: int) -> None:
    pool = np.random.default_rng(20 + K).standard_normal((K, 3))
    optimum = pool_optimum(PoolLoss(pool, 10, 0.5))
    assert optimum.loss < optimum.loss_nuisance_free * (1 - 1e-3)
    assert np.linalg.norm(optimum.nuisance["u_x"]) > 1e-3


def test_gamma_is_the_linear_part_of_the_weights() -> None:
    pool = np.random.default_rng(5).standard_normal((2, 2))
    optimum = pool_optimum(PoolLoss(pool, 4, 0.3), starts=4)
    u, M = optimum.u, optimum.M
    gamma = u[-1] * M[:2].T + np.outer(M[2], u[:2])
    np.testing.assert_allclose(optimum.gamma, gamma, rtol=0, atol=1e-12)
    assert abs(np.linalg.norm(u) - 1) < 1e-12


def test_search_cost_is_bounded_up_front() -> None:
    """A pool whose search is over MAX_POOL_WORK is refused before any search (one line naming
    the limit and the most tasks); the largest accepted count passes the check."""
    from iclab.studies.pool.cost import MAX_POOL_WORK, check_pool_work, pool_work
    from iclab.utils.errors import ConfigError
    most = int(MAX_POOL_WORK // pool_work(1, 3, 24))
    check_pool_work(most, 3, 24)
    with pytest.raises(ConfigError, match=f"--tasks {most + 1}: .*limit.*at most {most}"):
        check_pool_work(most + 1, 3, 24)
