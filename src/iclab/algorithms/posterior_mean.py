"""The Bayes-optimal predictor for a linear Gaussian law whose task prior is not centred.

With w ~ N(mu, Omega) and y = X w + sigma eps, the posterior mean of w is

    w_hat = mu + (X^T X + sigma^2 Omega^{-1})^{-1} X^T (y - X mu),

ridge on the residuals y - X mu, shifted by mu; with sigma = 0 the limit
mu + Omega X^T (X Omega X^T)^+ (y - X mu): the solution of X w = y closest to mu in the
Omega^{-1} metric, computed as mu + L v with L L^T = Omega and v the minimum-norm least-squares
solution of (X L) v = y - X mu (LAPACK's gelsy, several times faster than a pseudo-inverse of
the n x n kernel). Whatever
the law of the query, x_q^T w_hat minimises E[(yhat - y_q)^2], because x_q is independent of
(w, X, y).
"""

from __future__ import annotations

import numpy as np
import torch

from iclab.algorithms.base import InContextAlgorithm
from iclab.algorithms.baselines import BayesPosteriorMean
from iclab.utils.errors import ConfigError


class GaussianPosteriorMean(InContextAlgorithm):
    """Posterior mean of w under the prior N(w_mean, cov_w) and noise sigma >= 0.

    cov_w: (d, d) positive definite; w_mean: (d,) finite (None means 0).
    """

    name = "bayes"

    def __init__(self, sigma: float, cov_w: np.ndarray, w_mean: np.ndarray | None = None
                 ) -> None:
        self.centred = BayesPosteriorMean(sigma, cov_w)
        d = self.centred.sigma_w.shape[0]
        mean = np.zeros(d) if w_mean is None else np.asarray(w_mean, dtype=np.float64)
        if mean.shape != (d,) or not np.all(np.isfinite(mean)):
            raise ConfigError(f"w_mean must be a finite vector of shape ({d},), "
                              f"got shape {mean.shape}")
        self.w_mean = mean

    def fit(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n) -> the posterior means: (B, d)."""
        mu = torch.as_tensor(self.w_mean, dtype=X.dtype, device=X.device)
        residual = y - X @ mu                                          # (B, n)
        if self.centred.sigma > 0:
            return self.centred.fit(X, residual) + mu
        chol = torch.as_tensor(np.linalg.cholesky(self.centred.sigma_w), dtype=X.dtype,
                               device=X.device)
        driver = "gelsy" if X.device.type == "cpu" else None
        v: torch.Tensor = torch.linalg.lstsq(X @ chol, residual[..., None], driver=driver).solution
        return v.squeeze(-1) @ chol.T + mu
