"""The expected squared error of three predictors after k in-context examples, in closed form,
for isotropic Gaussian prompts: x_i, x_q ~ N(0, I_d), w ~ N(0, I_d), y = w^T x + sigma eps
(docs/theory.md section 17). Each function returns E[(yhat - y_q)^2], the query's own noise
included (divide by d for the curves of Garg et al.), and ``math.inf`` where the expectation
diverges.

- minimum-norm least squares (k <= d - 2: d - k + sigma^2 k / (d - k - 1) + sigma^2;
  k >= d + 2: sigma^2 d / (k - d - 1) + sigma^2; k in {d - 1, d, d + 1}: infinite when
  sigma > 0, and max(d - k, 0) when sigma = 0);
- averaging, w_hat = (1/k) sum_i y_i x_i: d (d + 1 + sigma^2) / k + sigma^2 (k >= 1);
- the Bayes predictor (the posterior mean) at sigma = 0: max(d - k, 0).

At k = 0 every one of them predicts 0 (the prior mean): error d + sigma^2.
"""

from __future__ import annotations

import math

import numpy as np


def _check(k: int, d: int, sigma: float) -> None:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 0:
        raise ValueError(f"k must be an integer >= 0, got {k!r}")
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1:
        raise ValueError(f"d must be an integer >= 1, got {d!r}")
    if not (math.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"sigma must be a finite number >= 0, got {sigma!r}")


def least_squares_error(k: int, d: int, sigma: float) -> float:
    """E[(x_q^T pinv(X) y - y_q)^2] after k examples (X: (k, d)); inf where it diverges."""
    _check(k, d, sigma)
    noise = sigma**2
    if k <= d - 2:  # underdetermined: the unseen part of w, plus the noise through (XX^T)^-1
        return (d - k) + noise * k / (d - k - 1) + noise
    if k >= d + 2:  # overdetermined: the noise through (X^T X)^-1
        return noise * d / (k - d - 1) + noise
    if noise > 0:   # k in {d-1, d, d+1}: E tr of an inverse Wishart with too few degrees
        return math.inf
    return float(max(d - k, 0))


def averaging_error(k: int, d: int, sigma: float) -> float:
    """E[(x_q^T w_hat - y_q)^2] for w_hat = (1/k) sum_i y_i x_i (k = 0: w_hat = 0)."""
    _check(k, d, sigma)
    if k == 0:
        return d + sigma**2
    return d * (d + 1 + sigma**2) / k + sigma**2


def bayes_noiseless_error(k: int, d: int) -> float:
    """The Bayes risk at sigma = 0: the posterior mean is the projection of w on the span of
    the k examples, whose error is the unseen part, E|(I - P) w|^2 = max(d - k, 0)."""
    _check(k, d, 0.0)
    return float(max(d - k, 0))
