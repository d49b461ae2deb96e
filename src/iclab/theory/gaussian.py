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

import math
from dataclasses import dataclass

import numpy as np

from iclab.tasks.covariance import validate_covariance
from iclab.utils.errors import ConfigError


def _is_number(value: object) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) \
        and not isinstance(value, bool) and math.isfinite(value)


def _check(n: float, sigma: float, d: float | None = None) -> None:
    """ConfigError (a ValueError) naming n, sigma or d when it is not allowed: n and d are
    numbers >= 1 (real ones too: the formulas are plotted as curves in n), sigma >= 0."""
    if not _is_number(n) or n < 1:
        raise ConfigError(f"n must be an integer >= 1, got {n!r}")
    if not _is_number(sigma) or sigma < 0:
        raise ConfigError(f"sigma must be a finite number >= 0, got {sigma!r}")
    if d is not None and (not _is_number(d) or d < 1):
        raise ConfigError(f"d must be an integer >= 1, got {d!r}")


def covariances(
    sigma_x: np.ndarray | None, sigma_w: np.ndarray | None, d: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(Sigma_x, Sigma_w) as checked float64 (d, d) arrays (symmetric, positive definite,
    entries within ``iclab.tasks.covariance``'s scale bounds); None is the identity, and
    ``d`` is needed only when both are None."""
    given = sigma_x if sigma_x is not None else sigma_w
    if d is not None:
        dim = d
    elif given is not None:
        if np.ndim(given) != 2:
            raise ConfigError(f"a covariance must be a (d, d) matrix, got shape "
                              f"{np.shape(given)}")
        dim = int(np.shape(given)[0])
    else:
        raise ConfigError("give d or at least one covariance")
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or dim < 1:
        raise ConfigError(f"d must be an integer >= 1, got {dim!r}")
    sx = np.eye(dim) if sigma_x is None else validate_covariance(sigma_x, dim, "sigma_x")
    sw = np.eye(dim) if sigma_w is None else validate_covariance(sigma_w, dim, "sigma_w")
    return sx, sw


def tidy(matrix: np.ndarray) -> np.ndarray:
    """``matrix`` with entries below its rounding error (16 d eps times its largest entry) set
    to +0.0: the exact zeros of a closed form print as 0, never as -0.0 or 1e-19."""
    array = np.array(matrix, dtype=np.float64)
    tolerance = 16 * max(array.shape[0], 1) * np.finfo(np.float64).eps * float(
        np.max(np.abs(array), initial=0.0))
    array[np.abs(array) <= tolerance] = 0.0
    return array


def eta_star_isotropic(n: int, d: int, sigma: float) -> float:
    """Theorem 1's optimal step size 1 / (n + d + 1 + sigma^2)."""
    _check(n, sigma, d)
    return 1.0 / (n + d + 1 + sigma**2)


def eta_star_continued(n: float, d: float, sigma: float) -> float:
    """1 / (n + d + 1 + sigma^2) for real n, d > 0: Theorem 1's step size continued between
    the integers (the smooth theory curve of a figure)."""
    return 1.0 / (float(n) + float(d) + 1.0 + float(sigma) ** 2)


def loss_star_isotropic(n: int, d: int, sigma: float) -> float:
    """Theorem 1's optimal loss d (d + 1 + sigma^2) / (n + d + 1 + sigma^2) + sigma^2, as one
    quotient (exactly rounded when sigma^2 is an integer)."""
    _check(n, sigma, d)
    s2 = sigma**2
    denominator = n + d + 1 + s2
    return (d * (d + 1 + s2) + s2 * denominator) / denominator


def second_moment_K(n: int, sigma: float, sigma_x: np.ndarray, sigma_w: np.ndarray) -> np.ndarray:
    """K with E[v v^T] = n K: (d, d)."""
    _check(n, sigma)
    return _second_moment(n, sigma, *covariances(sigma_x, sigma_w))


def _second_moment(n: int, sigma: float, sigma_x: np.ndarray, sigma_w: np.ndarray
                   ) -> np.ndarray:
    sxsw = sigma_x @ sigma_w
    K: np.ndarray = (n + 1) * sxsw @ sigma_x + (np.trace(sxsw) + sigma**2) * sigma_x
    return K


def gd_term_loss(
    gamma: np.ndarray, n: int, sigma: float, sigma_x: np.ndarray, sigma_w: np.ndarray
) -> float:
    """The loss of the predictor x_q^T Gamma X^T y (no nuisance terms), exactly; >= 0."""
    sigma_x, sigma_w = covariances(sigma_x, sigma_w)
    gamma = np.asarray(gamma, dtype=np.float64)
    if gamma.shape != sigma_x.shape or not np.all(np.isfinite(gamma)):
        raise ConfigError(f"gamma must be a finite {sigma_x.shape} matrix, got shape "
                          f"{gamma.shape}")
    _check(n, sigma)
    K = _second_moment(n, sigma, sigma_x, sigma_w)
    loss = float(
        np.trace(sigma_x @ sigma_w)
        + sigma**2
        - 2 * n * np.trace(sigma_x @ gamma @ sigma_x @ sigma_w)
        + n * np.trace(sigma_x @ gamma @ K @ gamma.T)
    )
    return max(loss, 0.0)  # a loss is >= 0: a negative value is rounding


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

    Covariances default to the identity (then ``d`` must be given); given ones must be
    symmetric positive definite with entries between 1e-8 and 1e8 in size (ConfigError
    otherwise). With both the identity, Theorem 1's formulas give eta*, Gamma* = eta* I and L*
    exactly; with both diagonal, Gamma* is computed on the diagonal; otherwise entries of
    Gamma* below its rounding error are exact zeros (``tidy``).
    """
    _check(n, sigma)
    sx, sw = covariances(sigma_x, sigma_w, d)
    dim = sx.shape[0]
    identity = np.eye(dim)
    if np.array_equal(sx, identity) and np.array_equal(sw, identity):  # Theorem 1, exactly
        eta_star = eta_star_isotropic(n, dim, sigma)
        return GaussianOptimum(gamma=eta_star * identity,
                               loss=loss_star_isotropic(n, dim, sigma), eta=eta_star,
                               isotropic=True)
    a, b = np.diagonal(sx), np.diagonal(sw)
    if np.array_equal(sx, np.diag(a)) and np.array_equal(sw, np.diag(b)):  # all diagonal
        trace = float(a @ b)
        diagonal = b * a / ((n + 1) * a * a * b + (trace + sigma**2) * a)
        loss = trace + sigma**2 - n * float(np.sum(a * diagonal * a * b))
        eta = float(np.mean(diagonal))
        return GaussianOptimum(gamma=np.diag(diagonal), loss=max(loss, 0.0), eta=eta,
                               isotropic=bool(np.all(diagonal == diagonal[0])))
    K = _second_moment(n, sigma, sx, sw)
    gamma = tidy(np.linalg.solve(K.T, (sw @ sx).T).T)    # Sigma_w Sigma_x K^{-1}
    loss = float(np.trace(sx @ sw) + sigma**2 - n * np.trace(sx @ gamma @ sx @ sw))
    eta = float(np.trace(gamma) / dim)
    scale = float(np.linalg.norm(gamma))
    isotropic = bool(np.linalg.norm(gamma - eta * np.eye(dim)) <= 1e-12 * max(scale, 1e-300))
    return GaussianOptimum(gamma=gamma, loss=max(loss, 0.0), eta=eta, isotropic=isotropic)
