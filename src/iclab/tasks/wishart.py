"""Linear Gaussian prompts drawn as Z = sum_i e_i e_i^T: the n-independent sampler for depth.

Every layer of an L-layer linear self-attention multiplies every token by one matrix that
depends on the prompt only through its current Gram matrix (the theory docs, docs/theory.md,
section 6), so the prediction is a function of Z = sum_{i <= n} e_i e_i^T, e_i = [x_i; y_i],
and of x_q, at any depth. Given w, e_i = L_w g_i with g_i ~ N(0, I_(d+1)) i.i.d. and

    L_w = [[L_x, 0], [w^T L_x, sigma]]        (L_x the lower Cholesky factor of Sigma_x),

so Z | w = L_w W L_w^T with W = sum_i g_i g_i^T ~ Wishart(n, I_(d+1)), independent of w,
x_q and the query's noise. W = F F^T is drawn as:

- n > d+1: the Bartlett decomposition, F lower triangular (d+1, d+1) with
  F_ii = sqrt(chi2_(n-i)) (i = 0..d) and F_ij ~ N(0, 1) below the diagonal:
  (d+1)(d+2)/2 random numbers whatever n is;
- n <= d+1 (W singular for n < d+1): F = [g_1 ... g_n] itself, n (d+1) <= (d+1)^2 numbers.

Z = (L_w F)(L_w F)^T. Every batch of per-prompt matrices is stored batch-last, (d+1, d+1, B),
and handed out as a (B, d+1, d+1) view, which ``iclab.models.lsa.deep_statistics`` reads
without a copy.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import torch

from iclab.tasks.base import check_batch
from iclab.utils.batches import ZStatistics
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import numpy_generator


class GaussianTask(Protocol):
    """What the Z sampler reads of a linear Gaussian family (``LinearGaussian``): a family's
    sizes, noise, name and ``gaussian`` capability, and its covariances (None: the
    identity)."""

    @property
    def name(self) -> str: ...
    @property
    def d(self) -> int: ...
    @property
    def n(self) -> int: ...
    @property
    def sigma(self) -> float: ...
    @property
    def gaussian(self) -> bool: ...

    @property
    def cov_x(self) -> np.ndarray | None: ...
    @property
    def cov_w(self) -> np.ndarray | None: ...
    @property
    def sigma_x(self) -> np.ndarray: ...
    @property
    def sigma_w(self) -> np.ndarray: ...


def wishart_factor(
    p: int, n: int, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """F: (p, k, batch), k = p if n > p else n, with F F^T ~ Wishart(n, I_p) for each prompt.

    Bartlett's lower-triangular factor for n > p, n standard normal columns for n <= p.
    """
    device = generator.device
    if n <= p:
        return torch.randn(p, n, batch, generator=generator, dtype=dtype, device=device)
    rows, cols = torch.tril_indices(p, p, -1, device=device)
    factor = torch.zeros(p, p, batch, dtype=dtype, device=device)
    below = torch.randn(rows.numel(), batch, generator=generator, dtype=dtype, device=device)
    factor.view(p * p, batch).index_copy_(0, rows * p + cols, below)
    diagonal = chi_square([n - i for i in range(p)], batch, generator, dtype).sqrt_()
    factor.diagonal(0, 0, 1).copy_(diagonal.T)
    return factor


def chi_square(
    dof: list[int], batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """(len(dof), batch) chi-square draws, row j with dof[j] >= 0 degrees of freedom (0 gives
    0): twice NumPy's standard gamma of shape dof/2, from a NumPy generator seeded by
    ``generator`` (``iclab.utils.seeding.numpy_generator``), on ``generator``'s device."""
    rng, size = numpy_generator(generator), (len(dof), batch)
    shapes = np.array([[k / 2] for k in dof], dtype=np.float64)
    draws = rng.standard_gamma(shapes, size) if dtype == torch.float64 else \
        rng.standard_gamma(shapes.astype(np.float32), size, np.float32)
    return torch.from_numpy(draws).to(generator.device, dtype).mul_(2)


def _cholesky(cov: np.ndarray, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    return torch.as_tensor(np.linalg.cholesky(cov), dtype=dtype, device=device)


def sample_z_statistics(
    task: GaussianTask,
    batch: int,
    generator: torch.Generator,
    dtype: torch.dtype = torch.float32,
) -> ZStatistics:
    """Draw ``batch`` prompts of ``task`` as (Z, x_q, y_q): the law of whole prompts, a cost
    that does not grow with n. Every number comes from ``generator``."""
    if not task.gaussian:
        raise ConfigError(f"the Z sampler needs a linear Gaussian task, got {task.name!r}")
    check_batch(batch)
    d, n, p, device = task.d, task.n, task.d + 1, generator.device
    normals = torch.randn(2 * d + 1, batch, generator=generator, dtype=dtype, device=device)
    w, x_q, noise = normals[:d], normals[d : 2 * d], normals[2 * d]      # (d, B), (d, B), (B,)
    factor = wishart_factor(p, n, batch, generator, dtype)                # (p, k, B)
    if task.cov_w is not None:
        w = _cholesky(task.sigma_w, dtype, device) @ w
    scaled = torch.empty_like(factor)                                     # L_w F
    if task.cov_x is None:
        omega = w
        scaled[:d] = factor[:d]
    else:
        chol_x = _cholesky(task.sigma_x, dtype, device)
        x_q = chol_x @ x_q
        omega = chol_x.T @ w                                              # L_x^T w
        k = factor.shape[1]
        scaled[:d] = (chol_x @ factor[:d].reshape(d, k * batch)).view(d, k, batch)
    torch.sum(omega[:, None] * factor[:d], 0, out=scaled[d])
    scaled[d].add_(factor[d], alpha=float(task.sigma))
    Z = scaled[:, 0, None] * scaled[None, :, 0]                           # (p, p, B)
    for j in range(1, scaled.shape[1]):
        Z.addcmul_(scaled[:, j, None], scaled[None, :, j])
    y_q = (w * x_q).sum(0).add_(noise, alpha=float(task.sigma))
    return ZStatistics(Z=Z.permute(2, 0, 1), x_q=x_q.T, y_q=y_q, n=n)
