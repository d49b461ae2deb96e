"""The optimal one-layer LSA for linear Gaussian tasks, in closed form (docs/theory.md section 4).

With S = X^T X ~ Wishart(n, Sigma_x) and v = X^T y:
E[v w^T] = n Sigma_x Sigma_w, E[v v^T] = n K,
K = (n+1) Sigma_x Sigma_w Sigma_x + (tr(Sigma_w Sigma_x) + sigma^2) Sigma_x.
The predictor x_q^T Gamma v has loss
L(Gamma) = tr(Sigma_x Sigma_w) + sigma^2 - 2n tr(Sigma_x Gamma Sigma_x Sigma_w)
           + n tr(Sigma_x Gamma K Gamma^T),
minimised by Gamma* = Sigma_w Sigma_x K^{-1}. The nuisance terms are odd in (w, eps) and vanish
at the optimum, so Gamma* is the global optimum of the LSA. Everything here is float64 numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def _check(n: int, sigma: float) -> None:
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not np.isfinite(sigma) or sigma < 0:
        raise ValueError(f"sigma must be a finite number >= 0, got {sigma}")


def eta_star_isotropic(n: int, d: int, sigma: float) -> float:
    """Theorem 1's optimal step size 1 / (n + d + 1 + sigma^2)."""
    _check(n, sigma)
    return 1.0 / (n + d + 1 + sigma**2)


def loss_star_isotropic(n: int, d: int, sigma: float) -> float:
    """Theorem 1's optimal loss d (d + 1 + sigma^2) / (n + d + 1 + sigma^2) + sigma^2."""
    _check(n, sigma)
    return d * (d + 1 + sigma**2) / (n + d + 1 + sigma**2) + sigma**2


def second_moment_K(n: int, sigma: float, sigma_x: np.ndarray, sigma_w: np.ndarray) -> np.ndarray:
    """K with E[v v^T] = n K: (d, d)."""
    _check(n, sigma)
    sxsw = sigma_x @ sigma_w
    K: np.ndarray = (n + 1) * sxsw @ sigma_x + (np.trace(sxsw) + sigma**2) * sigma_x
    return K


def gd_term_loss(
    gamma: np.ndarray, n: int, sigma: float, sigma_x: np.ndarray, sigma_w: np.ndarray
) -> float:
    """The loss of the predictor x_q^T Gamma X^T y (no nuisance terms), exactly."""
    K = second_moment_K(n, sigma, sigma_x, sigma_w)
    return float(
        np.trace(sigma_x @ sigma_w)
        + sigma**2
        - 2 * n * np.trace(sigma_x @ gamma @ sigma_x @ sigma_w)
        + n * np.trace(sigma_x @ gamma @ K @ gamma.T)
    )


@dataclass(frozen=True)
class GaussianOptimum:
    """Gamma*: (d, d), the optimal loss L*, and eta* = tr(Gamma*)/d with whether Gamma* = eta* I."""

    gamma: np.ndarray
    loss: float
    eta: float
    isotropic: bool


def gaussian_optimum(
    n: int,
    sigma: float,
    sigma_x: np.ndarray | None = None,
    sigma_w: np.ndarray | None = None,
    d: int | None = None,
) -> GaussianOptimum:
    """Gamma* = Sigma_w Sigma_x K^{-1} and L* for any positive-definite Sigma_x, Sigma_w.

    Covariances default to the identity (then ``d`` must be given).
    """
    if sigma_x is None and sigma_w is None and d is None:
        raise ValueError("give d or at least one covariance")
    dim = d if d is not None else (sigma_x if sigma_x is not None else sigma_w).shape[0]  # type: ignore[union-attr]
    sx = np.eye(dim) if sigma_x is None else np.asarray(sigma_x, dtype=np.float64)
    sw = np.eye(dim) if sigma_w is None else np.asarray(sigma_w, dtype=np.float64)
    K = second_moment_K(n, sigma, sx, sw)
    gamma = np.linalg.solve(K.T, (sw @ sx).T).T          # Sigma_w Sigma_x K^{-1}
    loss = float(np.trace(sx @ sw) + sigma**2 - n * np.trace(sx @ gamma @ sx @ sw))
    eta = float(np.trace(gamma) / dim)
    scale = float(np.linalg.norm(gamma))
    isotropic = bool(np.linalg.norm(gamma - eta * np.eye(dim)) <= 1e-12 * max(scale, 1e-300))
    return GaussianOptimum(gamma=gamma, loss=loss, eta=eta, isotropic=isotropic)
