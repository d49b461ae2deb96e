"""dMMSE: the Bayes predictor of a finite task pool (Raventos et al. 2023, arXiv 2306.15063).

With the task uniform on the pool w_1..w_K and Gaussian label noise sigma, the posterior of
the task given a prompt's examples puts on w_k the weight

    p_k = softmax_k( -|y - X w_k|^2 / (2 sigma^2) ),

and the posterior mean w_hat = sum_k p_k w_k is the predictor of least squared error on
prompts of that law (its prediction w_hat . x_q). At sigma = 0 the weights are the limit:
uniform over the tasks that fit the examples best.
"""

from __future__ import annotations

import numpy as np
import torch

from iclab.algorithms.base import InContextAlgorithm
from iclab.utils.errors import ConfigError


class PoolPosteriorMean(InContextAlgorithm):
    """The posterior mean of w over a (K, d) pool, noise ``sigma`` >= 0."""

    name = "dmmse"

    def __init__(self, pool: np.ndarray, sigma: float) -> None:
        array = np.asarray(pool, dtype=np.float64)
        if array.ndim != 2 or array.shape[0] < 1 or not np.all(np.isfinite(array)):
            raise ConfigError(f"dMMSE needs a finite (K, d) pool with K >= 1, got shape "
                              f"{array.shape}")
        if not (np.isfinite(sigma) and sigma >= 0):
            raise ConfigError(f"sigma must be a finite number >= 0, got {sigma!r}")
        self.pool = array
        self.sigma = float(sigma)

    def weights(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The posterior weights of the pool's tasks: (B, K)."""
        pool = torch.as_tensor(self.pool, dtype=X.dtype, device=X.device)     # (K, d)
        residual = (y[:, None, :] - torch.einsum("bnd,kd->bkn", X, pool)).square().sum(-1)
        if self.sigma > 0:
            return torch.softmax(-residual / (2 * self.sigma**2), dim=-1)
        best = residual <= residual.min(-1, keepdim=True).values * (1 + 1e-12) + 1e-300
        return best.to(X.dtype) / best.sum(-1, keepdim=True)

    def fit(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n) -> the posterior mean w_hat: (B, d)."""
        pool = torch.as_tensor(self.pool, dtype=X.dtype, device=X.device)
        return self.weights(X, y) @ pool
