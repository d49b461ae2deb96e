"""Small builders shared by the tests (not a test module)."""

from __future__ import annotations

import numpy as np
import torch

from iclab.models.lsa.layer import LinearSelfAttention
from iclab.models.lsa.options import LSAOptions
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.batches import Prompts, ZStatistics
from iclab.utils.seeding import make_generator


def random_lsa(
    d: int, seed: int = 0, dtype: torch.dtype = torch.float64, **options: object
) -> LinearSelfAttention:
    """An LSA with O(1) random weights, so every nuisance term is present."""
    return LinearSelfAttention(
        d, LSAOptions(**options, init_scale=1.0, init="random"),  # type: ignore[arg-type]
        make_generator(seed, "test-init"), dtype=dtype)


def prompts(d: int, n: int, batch: int = 64, seed: int = 0, sigma: float = 0.5) -> Prompts:
    """Float64 linear Gaussian prompts."""
    task = LinearGaussian(d, n, sigma)
    return task.sample_prompts(batch, make_generator(seed, "test-prompts"), dtype=torch.float64)


def z_statistics_of(prompts: Prompts) -> ZStatistics:
    """Whole prompts reduced token by token: Z = sum_i e_i e_i^T with e_i = (x_i, y_i),
    Z: (B, d+1, d+1), beside the prompts' queries and labels."""
    tokens = torch.cat([prompts.X, prompts.y[..., None]], -1)          # (B, n, d+1)
    return ZStatistics(Z=tokens.transpose(1, 2) @ tokens, x_q=prompts.x_q, y_q=prompts.y_q,
                       n=int(prompts.X.shape[1]))


def random_spd(rng: np.random.Generator, d: int, ridge: float = 0.3) -> np.ndarray:
    """A random symmetric positive-definite (d, d) matrix: A A^T / d + ridge I."""
    a = rng.normal(size=(d, d))
    return np.asarray(a @ a.T / d + ridge * np.eye(d))
