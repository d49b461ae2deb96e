"""The Monte Carlo samples behind the multi-step optimum: Wishart draws, and the per-prompt
loss computed three ways (matrices, eigenvalues, whitened coordinates)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.tasks.nonlinear import ReluTask
from iclab.theory.depth.multistep_mc import GaussianSample, draw_sample, wishart
from iclab.theory.depth.preconditioned_steps import preconditioned_matrices
from iclab.theory.depth.step_search import step_matrices, step_polynomials
from iclab.theory.depth.wishart_moments import wishart_trace_moments
from iclab.utils.seeding import make_generator
from tests.helpers import random_spd


@pytest.mark.parametrize(("n", "d"), [(12, 4), (3, 5)])
def test_wishart_draws_have_the_exact_moments(n: int, d: int) -> None:
    """Bartlett (n >= d) and X^T X (n < d): E tr(S^k), k <= 4, within 4 stderr."""
    count = 100_000
    S = wishart(n, torch.eye(d, dtype=torch.float64), count, make_generator(0, "test-wishart"))
    exact = wishart_trace_moments(4, n, d)
    for k in range(1, 5):
        traces = torch.linalg.matrix_power(S, k).diagonal(dim1=-2, dim2=-1).sum(-1)
        se = float(traces.std()) / count**0.5
        assert abs(float(traces.mean()) - exact[k]) < 4 * se, k


def test_wishart_draws_carry_the_covariance() -> None:
    cov = random_spd(np.random.default_rng(1), 3)
    chol = torch.as_tensor(np.linalg.cholesky(cov), dtype=torch.float64)
    S = wishart(7, chol, 100_000, make_generator(1, "test-wishart"))
    mean, se = S.mean(0).numpy(), S.std(0).numpy() / 100_000**0.5
    assert np.all(np.abs(mean - 7 * cov) < 4 * se)


def test_gaussian_loss_is_the_whole_prompt_loss() -> None:
    """E[loss | S] integrates w, the noise and the query: the mean over Wishart draws agrees
    with whole prompts (a fixed preconditioned M: two steps with random matrices)."""
    cov_x = random_spd(np.random.default_rng(2), 3)
    cov_w = random_spd(np.random.default_rng(3), 3)
    task = LinearGaussian(3, 8, 0.6, cov_x=cov_x, cov_w=cov_w)
    A = torch.as_tensor(0.04 * np.random.default_rng(4).normal(size=(2, 3, 3)) + 0.05 * np.eye(3))
    conditional = draw_sample(task, 100_000, 0, "test-conditional")
    c_losses = conditional.losses(preconditioned_matrices(A, conditional.S))
    prompts = task.sample_prompts(100_000, make_generator(0, "test-whole"), torch.float64)
    S = prompts.X.transpose(1, 2) @ prompts.X
    v = torch.einsum("bnd,bn->bd", prompts.X, prompts.y)
    yhat = torch.einsum("bi,bij,bj->b", prompts.x_q, preconditioned_matrices(A, S), v)
    w_losses = (yhat - prompts.y_q) ** 2
    gap = float(c_losses.mean() - w_losses.mean())
    se = (float(c_losses.var()) / 100_000 + float(w_losses.var()) / 100_000) ** 0.5
    assert abs(gap) < 4 * se
    assert float(c_losses.std()) < float(w_losses.std())    # the point of integrating


def test_three_ways_to_the_same_loss() -> None:
    """For M = q(S): batched matrices, the eigenvalue form, and the whitened coordinates
    (with the preconditioners mapped to T^T A T) agree to rounding."""
    cov_x = random_spd(np.random.default_rng(5), 4)
    cov_w = random_spd(np.random.default_rng(6), 4)
    sample = draw_sample(LinearGaussian(4, 9, 0.4, cov_x=cov_x, cov_w=cov_w), 2_000, 0, "t")
    assert isinstance(sample, GaussianSample)
    etas = torch.tensor([0.02, 0.05, 0.09], dtype=torch.float64)
    by_matrices = sample.losses(step_matrices(etas, sample.S))
    spectral = sample.spectral()
    by_eigenvalues = spectral.losses(*step_polynomials(etas, spectral.eigenvalues))
    assert torch.allclose(by_matrices, by_eigenvalues, rtol=1e-10)
    canonical, T = sample.canonical()
    A = torch.stack([eta * torch.eye(4, dtype=torch.float64) for eta in etas])
    whitened = canonical.losses(preconditioned_matrices(T.T @ A @ T, canonical.S))
    assert torch.allclose(by_matrices, whitened, rtol=1e-10)


def test_prompt_samples_two_ways() -> None:
    sample = draw_sample(ReluTask(3, 6, 0.3), 3_000, 0, "t")
    etas = torch.tensor([0.05, 0.1], dtype=torch.float64)
    spectral = sample.spectral()
    assert torch.allclose(sample.losses(step_matrices(etas, sample.S)),
                          spectral.losses(*step_polynomials(etas, spectral.eigenvalues)),
                          rtol=1e-10)
    assert sample.canonical()[0] is sample


def test_samples_are_reproducible() -> None:
    task = LinearGaussian(3, 5, 0.1)
    assert torch.equal(draw_sample(task, 30_000, 4, "s").S, draw_sample(task, 30_000, 4, "s").S)
    assert not torch.equal(draw_sample(task, 100, 4, "s").S, draw_sample(task, 100, 5, "s").S)
