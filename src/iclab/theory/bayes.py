"""The Bayes risk of linear Gaussian tasks by Monte Carlo (docs/theory.md section 7).

The posterior mean is ridge with penalty sigma^2 Sigma_w^{-1}; its risk given X is
sigma^2 + sigma^2 tr(Sigma_x (X^T X + sigma^2 Sigma_w^{-1})^{-1}), averaged here over X
(a Rao-Blackwellised estimate: only X is sampled). With sigma = 0 the risk given X is
E[(w^T x_q - w_hat^T x_q)^2 | X] = tr(Sigma_x Cov(w | X)), Cov(w | X) = Sigma_w - Sigma_w X^T
(X Sigma_w X^T)^+ X Sigma_w.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from iclab.errors import ConfigError
from iclab.seeding import make_generator
from iclab.tasks.covariance import validate_covariance


def bayes_risk(
    n: int,
    sigma: float,
    sigma_x: np.ndarray,
    sigma_w: np.ndarray,
    prompts: int = 20_000,
    seed: int = 0,
) -> tuple[float, float]:
    """(mean, standard error) of the Bayes-optimal predictor's loss, float64.

    n >= 1, sigma >= 0, sigma_x and sigma_w (d, d) positive definite, prompts >= 2.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"n must be an integer >= 1, got {n!r}")
    if not (isinstance(sigma, int | float) and math.isfinite(sigma) and sigma >= 0):
        raise ConfigError(f"sigma must be a finite number >= 0, got {sigma!r}")
    if isinstance(prompts, bool) or not isinstance(prompts, int) or prompts < 2:
        raise ConfigError(f"prompts must be an integer >= 2, got {prompts!r}")
    d = np.shape(sigma_x)[0]
    sigma_x = validate_covariance(sigma_x, d, "sigma_x")
    sigma_w = validate_covariance(sigma_w, d, "sigma_w")
    generator = make_generator(seed, "bayes-risk")
    chol_x = torch.as_tensor(np.linalg.cholesky(sigma_x))
    cov_x = torch.as_tensor(sigma_x)
    cov_w = torch.as_tensor(sigma_w)
    risks = []
    chunk = max(1, 2_000_000 // (n * d + d * d))
    done = 0
    while done < prompts:
        size = min(chunk, prompts - done)
        X = torch.randn(size, n, d, generator=generator, dtype=torch.float64) @ chol_x.T
        if sigma > 0:
            precision = X.transpose(1, 2) @ X + sigma**2 * torch.linalg.inv(cov_w)
            risk = sigma**2 + sigma**2 * torch.einsum(
                "ij,bji->b", cov_x, torch.linalg.inv(precision)
            )
        else:
            XS = X @ cov_w                                        # (B, n, d)
            kernel = torch.linalg.pinv(XS @ X.transpose(1, 2))   # (B, n, n)
            posterior = cov_w - XS.transpose(1, 2) @ kernel @ XS  # (B, d, d)
            risk = torch.einsum("ij,bji->b", cov_x, posterior)
        risks.append(risk)
        done += size
    values = torch.cat(risks)
    return float(values.mean()), float(values.std() / math.sqrt(values.numel()))
