"""The Bayes predictor of the drifting family: a Kalman filter on the task w_i.

State w_i (w_1 ~ N(0, I)), transition w_(i+1) = rho w_i + sqrt(1 - rho^2) xi_i, observation
y_i = x_i^T w_i + sigma eps_i. After the n examples the filter holds the posterior of
w_(n+1): mean m, covariance P; the Bayes prediction is x_q^T m and its loss given the inputs
is x_q^T P x_q + sigma^2, so the Bayes risk is E[tr P] + sigma^2 (P does not depend on the
labels), estimated here by Monte Carlo over the inputs, in float64.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from iclab.algorithms.base import InContextPredictor
from iclab.utils.seeding import make_generator


def kalman_filter(X: torch.Tensor, y: torch.Tensor, sigma: float, rho: float
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """X: (B, k, d), y: (B, k) -> the posterior of w_(k+1): mean (B, d), covariance (B, d, d).
    An observation with no variance (sigma = 0 and x^T P x = 0) carries nothing and is
    skipped."""
    batch, length, d = X.shape
    eye = torch.eye(d, dtype=X.dtype, device=X.device)
    mean = X.new_zeros(batch, d)
    cov = eye.expand(batch, d, d).clone()
    for i in range(length):
        x = X[:, i]
        px = torch.einsum("bij,bj->bi", cov, x)
        innovation = (px * x).sum(-1) + sigma**2
        informative = innovation > 1e-300
        gain = torch.where(informative[:, None], px / innovation.clamp_min(1e-300)[:, None],
                           torch.zeros_like(px))
        mean = mean + gain * (y[:, i] - (mean * x).sum(-1))[:, None]
        cov = cov - gain[:, :, None] * px[:, None, :]
        mean = rho * mean
        cov = rho**2 * cov + (1 - rho**2) * eye
    return mean, cov


class KalmanPredictor(InContextPredictor):
    """The exact Bayes predictor of the drifting family: x_q^T m (``kalman_filter``)."""

    name = "kalman"

    def __init__(self, sigma: float, rho: float) -> None:
        self.sigma, self.rho = float(sigma), float(rho)

    def predict(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        mean, _ = kalman_filter(X.double(), y.double(), self.sigma, self.rho)
        return (mean * x_q.double()).sum(-1).to(X.dtype)


def bayes_risk(d: int, n: int, sigma: float, rho: float, draws: int = 20_000,
               seed: int = 0) -> tuple[float, float]:
    """(E[tr P] + sigma^2, its standard error) over ``draws`` seeded input draws."""
    generator = make_generator(seed, "drifting-bayes")
    X = torch.randn(draws, n, d, generator=generator, dtype=torch.float64)
    _, cov = kalman_filter(X, X.new_zeros(draws, n), sigma, rho)
    traces = np.asarray(torch.diagonal(cov, dim1=1, dim2=2).sum(-1))
    return (float(traces.mean()) + sigma**2,
            float(traces.std(ddof=1)) / math.sqrt(draws) if draws > 1 else 0.0)
