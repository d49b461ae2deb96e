"""The exact population loss against Gauss-Hermite quadrature, Monte Carlo and the closed forms.

Quadrature: for tiny (d, n) the loss is an expectation of a polynomial in the prompt's standard
normals with degree <= 6 in each coordinate, so a tensor Gauss-Hermite rule with 4 nodes per
coordinate (exact to degree 7) integrates it exactly, through the model's own forward pass:
an independent check to machine precision of every step of the derivation.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclab.algorithms.construct import lsa_from_gamma
from iclab.models.lsa.layer import LinearSelfAttention
from iclab.models.lsa.options import LSAOptions
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.gaussian import gaussian_optimum, gd_term_loss
from iclab.theory.population import PopulationLoss
from iclab.utils.seeding import make_generator
from tests.helpers import random_spd

OPTIONS = list(itertools.product([False, True], repeat=2))  # (normalise, attend_query)


def model_from(u: torch.Tensor, M: torch.Tensor, normalise: bool, attend_query: bool
               ) -> LinearSelfAttention:
    """An LSA whose effective() is exactly (u, M): W_V = u^T, h = 1, W_K = I, W_Q = [M, 0]."""
    d = M.shape[1]
    model = LinearSelfAttention(d, LSAOptions(key_dim=d + 1, value_dim=1, normalise=normalise,
                                              attend_query=attend_query, init="random"),
                                dtype=torch.float64)
    with torch.no_grad():
        model.W_V.copy_(u[None])
        model.h.fill_(1.0)
        model.W_K.copy_(torch.eye(d + 1, dtype=torch.float64))
        model.W_Q.zero_()
        model.W_Q[:, :d] = M
    return model


def quadrature_loss(model: LinearSelfAttention, task: LinearGaussian, nodes: int = 4) -> float:
    """E[(yhat - y_q)^2] by a tensor Gauss-Hermite rule over (X, label noise, w, x_q)."""
    d, n = task.d, task.n
    z, weights = np.polynomial.hermite_e.hermegauss(nodes)
    weights = weights / math.sqrt(2 * math.pi)
    dims = n * (d + 1) + 2 * d
    grid = np.stack(np.meshgrid(*([z] * dims), indexing="ij"), -1).reshape(-1, dims)
    mass = np.prod(np.stack(np.meshgrid(*([weights] * dims), indexing="ij"), -1), -1).ravel()
    g = torch.as_tensor(grid)
    chol_x = torch.as_tensor(np.linalg.cholesky(task.sigma_x))
    chol_w = torch.as_tensor(np.linalg.cholesky(task.sigma_w))
    X = g[:, : n * d].reshape(-1, n, d) @ chol_x.T
    w = g[:, n * (d + 1) : n * (d + 1) + d] @ chol_w.T
    x_q = g[:, n * (d + 1) + d :] @ chol_x.T
    y = torch.einsum("bnd,bd->bn", X, w) + task.sigma * g[:, n * d : n * (d + 1)]
    with torch.no_grad():
        error = model(X, y, x_q) - (w * x_q).sum(-1)
    return float((torch.as_tensor(mass) * error**2).sum()) + task.sigma**2


@pytest.mark.parametrize(("d", "n"), [(1, 1), (1, 2), (1, 3), (2, 1)])
@pytest.mark.parametrize("sigma", [0.0, 0.7])
def test_matches_exact_quadrature(d: int, n: int, sigma: float) -> None:
    rng = np.random.default_rng(100 * d + 10 * n + int(10 * sigma))
    task = LinearGaussian(d, n, sigma, random_spd(rng, d), random_spd(rng, d))
    exact = PopulationLoss.from_task(task)
    for normalise, attend_query in OPTIONS:
        u, M = torch.as_tensor(rng.normal(size=d + 1)), torch.as_tensor(rng.normal(size=(d + 1, d)))
        reference = quadrature_loss(model_from(u, M, normalise, attend_query), task)
        value = float(exact(u, M, normalise, attend_query))
        assert value == pytest.approx(reference, rel=1e-12)


def near_optimum_parameters(task: LinearGaussian, rng: np.random.Generator, spread: float
                            ) -> tuple[torch.Tensor, torch.Tensor]:
    """u, M around the optimum with every nuisance coefficient clearly nonzero."""
    d = task.d
    gamma = gaussian_optimum(task.n, task.sigma, task.sigma_x, task.sigma_w).gamma
    scale = float(np.abs(gamma).max())
    u = np.zeros(d + 1)
    u[d] = 1.0
    M = np.zeros((d + 1, d))
    M[:d] = gamma.T
    u = u + spread * rng.normal(size=d + 1)
    M = M + spread * scale * rng.normal(size=(d + 1, d))
    return torch.as_tensor(u), torch.as_tensor(M)


def monte_carlo_loss(model: LinearSelfAttention, task: LinearGaussian, prompts: int, seed: int
                     ) -> tuple[float, float]:
    """Mean squared error on fresh prompts (float64) and its standard error."""
    generator = make_generator(seed, "test-population")
    errors = []
    chunk = 50_000
    with torch.no_grad():
        for start in range(0, prompts, chunk):
            batch = task.sample_prompts(min(chunk, prompts - start), generator, torch.float64)
            errors.append((model(batch.X, batch.y, batch.x_q) - batch.y_q) ** 2)
    values = torch.cat(errors)
    return float(values.mean()), float(values.std() / math.sqrt(values.numel()))


MC_CASES = [  # every option combination, small and larger n, sigma 0 and > 0
    (n, 0.5 if (i + j) % 2 else 0.0, normalise, attend_query)
    for j, n in enumerate([1, 2, 12])
    for i, (normalise, attend_query) in enumerate(OPTIONS)
]


@pytest.mark.parametrize(("n", "sigma", "normalise", "attend_query"), MC_CASES)
def test_matches_monte_carlo(n: int, sigma: float, normalise: bool, attend_query: bool) -> None:
    d = 3
    rng = np.random.default_rng(7 * n + int(10 * sigma) + 2 * normalise + attend_query)
    task = LinearGaussian(d, n, sigma, random_spd(rng, d), random_spd(rng, d))
    u, M = near_optimum_parameters(task, rng, spread=0.3)
    if normalise:
        M = M * n
    model = model_from(u, M, normalise, attend_query)
    exact = float(model.exact_loss(task).detach())
    mean, stderr = monte_carlo_loss(model, task, 100_000, seed=n)
    assert stderr < 0.05 * mean  # the comparison below has teeth
    assert abs(mean - exact) < 3 * stderr


@pytest.mark.parametrize(("normalise", "attend_query"), OPTIONS)
@pytest.mark.parametrize(("d", "n", "sigma"), [(4, 10, 0.5), (3, 1, 0.0), (6, 40, 1.0)])
def test_equals_loss_star_at_constructed_optimum(
    d: int, n: int, sigma: float, normalise: bool, attend_query: bool
) -> None:
    rng = np.random.default_rng(d * n)
    cov_x, cov_w = random_spd(rng, d), random_spd(rng, d)
    optimum = gaussian_optimum(n, sigma, cov_x, cov_w)
    model = lsa_from_gamma(optimum.gamma, LSAOptions(normalise=normalise), n=n)
    with torch.no_grad():
        u, M = model.effective()
    task = LinearGaussian(d, n, sigma, cov_x, cov_w)
    # attend_query's cubic term vanishes with u_x = 0, so the loss is L* with it too.
    loss = PopulationLoss.from_task(task)(u, M, normalise, attend_query)
    assert float(loss) == pytest.approx(optimum.loss, rel=1e-12)


@pytest.mark.parametrize(("d", "n", "sigma"), [(4, 10, 0.5), (2, 3, 0.0), (5, 20, 2.0)])
def test_optimum_is_stationary_in_every_direction(d: int, n: int, sigma: float) -> None:
    """The gradient in (u, M), nuisance directions included, vanishes at the optimum."""
    rng = np.random.default_rng(d + n)
    task = LinearGaussian(d, n, sigma, random_spd(rng, d), random_spd(rng, d))
    gamma = gaussian_optimum(n, sigma, task.sigma_x, task.sigma_w).gamma
    u = torch.zeros(d + 1, dtype=torch.float64)
    u[d] = 1.0
    M = torch.zeros(d + 1, d, dtype=torch.float64)
    M[:d] = torch.as_tensor(gamma.T)
    u.requires_grad_(True)
    M.requires_grad_(True)
    loss = PopulationLoss.from_task(task)(u, M, attend_query=True)
    grad_u, grad_M = torch.autograd.grad(loss, (u, M))
    # Against the gradient a small move off the optimum produces:
    u_off, M_off = near_optimum_parameters(task, rng, spread=1e-3)
    moved = PopulationLoss.from_task(task)(u_off.requires_grad_(True), M_off.requires_grad_(True))
    scale = max(float(g.abs().max()) for g in torch.autograd.grad(moved, (u_off, M_off)))
    assert float(grad_u.abs().max()) < 1e-9 * scale
    assert float(grad_M.abs().max()) < 1e-9 * scale


def test_reduces_to_gd_term_loss_without_nuisance() -> None:
    rng = np.random.default_rng(3)
    for d, n, sigma in [(1, 1, 0.0), (3, 5, 0.4), (6, 30, 1.5)]:
        cov_x, cov_w = random_spd(rng, d), random_spd(rng, d)
        gamma = rng.normal(size=(d, d)) / (n + d)
        beta = 0.7
        u = torch.zeros(d + 1, dtype=torch.float64)
        u[d] = beta
        M = torch.zeros(d + 1, d, dtype=torch.float64)
        M[:d] = torch.as_tensor(gamma.T) / beta
        exact = PopulationLoss.from_task(LinearGaussian(d, n, sigma, cov_x, cov_w))
        for normalise in (False, True):
            value = float(exact(u, M * n if normalise else M, normalise))
            assert value == pytest.approx(gd_term_loss(gamma, n, sigma, cov_x, cov_w), rel=1e-12)


def test_nuisance_terms_only_raise_the_loss_at_the_optimum() -> None:
    d, n, sigma = 3, 8, 0.3
    rng = np.random.default_rng(11)
    task = LinearGaussian(d, n, sigma, random_spd(rng, d), random_spd(rng, d))
    star = gaussian_optimum(n, sigma, task.sigma_x, task.sigma_w).loss
    exact = PopulationLoss.from_task(task)
    for _ in range(20):
        u, M = near_optimum_parameters(task, rng, spread=0.05)
        for normalise, attend_query in OPTIONS:
            scaled = M * n if normalise else M
            assert float(exact(u, scaled, normalise, attend_query)) > star


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(0, 6), st.integers(0, 6))
def test_refuses_wrong_shapes(d: int, u_len: int, m_rows: int) -> None:
    exact = PopulationLoss.from_task(LinearGaussian(d, 3, 0.1))
    u = torch.zeros(u_len, dtype=torch.float64)
    M = torch.zeros(m_rows, d, dtype=torch.float64)
    if u_len == d + 1 and m_rows == d + 1:
        assert float(exact(u, M)) == pytest.approx(d + 0.01)  # the zero predictor's loss
    else:
        with pytest.raises(ValueError, match="must be"):
            exact(u, M)
