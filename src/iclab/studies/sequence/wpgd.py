"""Exact theory of weighted preconditioned gradient descent (WPGD) on Gaussian prompts whose
task drifts along the prompt (docs/theory.md, section "Sequence models").

The family (``iclab.studies.sequence.family``): x_i, x_q ~ N(0, I_d) independent,
w_1 ~ N(0, I_d), w_(i+1) = rho w_i + sqrt(1 - rho^2) xi_i (so every w_i ~ N(0, I_d) and
E[w_i w_j^T] = rho^|i-j| I), y_i = x_i^T w_i + sigma eps_i and the query labelled by
w_(n+1): y_q = x_q^T w_(n+1) + sigma eps_q. rho = 1 is the i.i.d. linear Gaussian family.

The predictor yhat = x_q^T Gamma g with g = sum_i omega_i y_i x_i has the population loss

    L(omega, Gamma) = (omega^T A omega) tr(Gamma Gamma^T) - 2 (omega^T r) tr(Gamma) + d + sigma^2,
    A_ij = rho^|i-j| (i != j),  A_ii = d + 2 + sigma^2,  r_i = rho^(n+1-i),

and its optimum over (omega, Gamma) is omega* proportional to A^(-1) r, Gamma* = eta* I with
eta* = (omega*^T r) / (omega*^T A omega*), and L* = d + sigma^2 - d r^T A^(-1) r. Uniform
weights give the optimal one-layer LSA, d + sigma^2 - d (1^T r)^2 / (1^T A 1). Everything in
float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from iclab.utils.errors import ConfigError


def check_rho(rho: object) -> float:
    """rho as a float in [0, 1]; ConfigError (one line) otherwise."""
    if isinstance(rho, bool) or not isinstance(rho, int | float) or not math.isfinite(rho) \
            or not 0 <= rho <= 1:
        raise ConfigError(f"rho must be a number in [0, 1], got {rho!r}")
    return float(rho)


def moment_matrix(d: int, n: int, sigma: float, rho: float) -> np.ndarray:
    """A: (n, n), E[g g^T] = (omega^T A omega) I for g = sum_i omega_i y_i x_i."""
    index = np.arange(n)
    A = np.asarray(float(rho) ** np.abs(index[:, None] - index[None, :]), dtype=np.float64)
    np.fill_diagonal(A, d + 2 + sigma**2)
    return A


def target_vector(n: int, rho: float) -> np.ndarray:
    """r: (n,), E[g w_(n+1)^T] = (omega^T r) I: r_i = rho^(n+1-i), i = 1..n."""
    return np.asarray(float(rho) ** np.arange(n, 0, -1, dtype=np.float64), dtype=np.float64)


def wpgd_loss(omega: np.ndarray, gamma: np.ndarray, sigma: float, rho: float) -> float:
    """The exact population loss of x_q^T Gamma sum_i omega_i y_i x_i on the drifting family
    (d from Gamma, n from omega), float64."""
    omega = np.asarray(omega, dtype=np.float64)
    gamma = np.asarray(gamma, dtype=np.float64)
    d, n = gamma.shape[0], omega.shape[0]
    A, r = moment_matrix(d, n, sigma, rho), target_vector(n, rho)
    c, b = float(omega @ A @ omega), float(omega @ r)
    return float(c * np.sum(gamma * gamma) - 2 * b * np.trace(gamma) + d + sigma**2)


@dataclass(frozen=True)
class WPGDOptimum:
    """The optimal WPGD and the optimal uniform-weight one (the one-layer LSA's optimum).

    omega: (n,) optimal weights normalised to sum to n (uniform weights are all 1); eta: the
    optimal Gamma* = eta I for those weights; loss: L*_wpgd; lsa_eta, lsa_loss: the optimum
    with uniform weights (omega = 1).
    """

    omega: np.ndarray
    eta: float
    loss: float
    lsa_eta: float
    lsa_loss: float

    def to_json(self) -> dict[str, Any]:
        return {"loss_star_wpgd": self.loss, "omega_star": self.omega.tolist(),
                "eta_star_wpgd": self.eta, "loss_star_lsa": self.lsa_loss,
                "eta_star_lsa": self.lsa_eta}


def wpgd_optimum(d: int, n: int, sigma: float, rho: float) -> WPGDOptimum:
    """The global optimum of ``wpgd_loss`` over (omega, Gamma) and the uniform-weight one."""
    rho = check_rho(rho)
    A, r = moment_matrix(d, n, sigma, rho), target_vector(n, rho)
    solved = np.linalg.solve(A, r)
    total = float(solved.sum())
    if rho == 0 or total == 0:          # nothing in the prompt carries w_(n+1): predict 0
        omega, eta = np.ones(n), 0.0
        loss = float(d + sigma**2)
    else:
        omega = solved * (n / total)
        eta = float(omega @ r) / float(omega @ A @ omega)
        loss = float(d + sigma**2 - d * float(r @ solved))
    ones = np.ones(n)
    lsa_eta = float(ones @ r) / float(ones @ A @ ones)
    lsa_loss = float(d + sigma**2 - d * float(ones @ r) ** 2 / float(ones @ A @ ones))
    return WPGDOptimum(omega=omega, eta=eta, loss=loss, lsa_eta=lsa_eta, lsa_loss=lsa_loss)
