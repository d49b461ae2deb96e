"""The plateaus of the exact training curve (docs/theory.md section 18).

- ``rank_k_losses``: the loss of the best nuisance-free one-layer LSA whose Gamma has rank k,
  k = 0..d. With L(Gamma) = c0 - 2n tr(Gamma X) + n tr(S Gamma K Gamma^T), the substitution
  Gamma = S^{-1/2} G K^{-1/2} makes it c0 + n (|G|_F^2 - 2 <G, C>), C = S^{-1/2} X K^{-1/2};
  by Eckart-Young the best rank-k G is C's truncated SVD, so L_k = c0 - n sum_{i<=k} s_i(C)^2.
  With Sigma_w = I, C is diagonal in Sigma_x's eigenbasis with s_i^2 = lambda_i^2 /
  ((n+1) lambda_i + tr Sigma_x + sigma^2), increasing in lambda_i: the best rank-k LSA is
  in-context principal-component regression on the top k eigendirections of Sigma_x.
- ``find_plateaus``: the stretches of a loss curve, sampled on a log grid of times, where the
  loss is flat on the log-time axis, each named by the rank k whose L_k it sits at.
- ``merged_drop_time``: merged heads from a small start on white data (Sigma_x = s I,
  Sigma_w = w I) reduce to a scalar two-layer network (Zhang, Singh, Latham and Saxe 2025,
  section 4; Saxe et al. 2014): z = <Gamma, I/sqrt d> follows z' = 4 lambda z (z* - z), so
  the loss drops once, a logistic in time, and makes half its drop at
  t_half = [ln(z*/z0 - 1) - ln(1 + sqrt 2)] / (4 b).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclab.studies.dynamics.heads_loss import HeadsLoss
from iclab.theory.gaussian import covariances, second_moment_K

FLAT_SLOPE = 2e-3
"""|d log L / d log t| below this is flat."""
MIN_SPAN = 0.3
"""A plateau lasts at least this long in ln t (a factor 1.35 in time)."""
MATCH = 0.02
"""A plateau is named by the rank k whose L_k is within this relative distance."""


def _inverse_sqrt(matrix: np.ndarray) -> np.ndarray:
    values, vectors = np.linalg.eigh(matrix)
    result: np.ndarray = (vectors / np.sqrt(values)) @ vectors.T
    return result


def rank_k_losses(n: int, sigma: float, sigma_x: np.ndarray | None,
                  sigma_w: np.ndarray | None = None, d: int | None = None) -> np.ndarray:
    """(L_0, ..., L_d): the best loss of a nuisance-free one-layer LSA whose Gamma has rank at
    most k (module doc); L_d is the global optimum L*."""
    sx, sw = covariances(sigma_x, sigma_w, d)
    K = second_moment_K(n, sigma, sx, sw)
    X = sx @ sw @ sx
    C = _inverse_sqrt(sx) @ X @ _inverse_sqrt(K)
    singular = np.linalg.svd(C, compute_uv=False)
    c0 = float(np.trace(sx @ sw)) + sigma**2
    return np.concatenate([[c0], c0 - n * np.cumsum(singular**2)])


@dataclass(frozen=True)
class Plateau:
    """A flat stretch of the curve: its loss (the curve's value where it is flattest), the
    rank k whose L_k it sits at (None: none within ``MATCH``), and its first and last time."""

    loss: float
    components: int | None
    start: float
    end: float

    def to_json(self) -> dict[str, float | int | None]:
        return {"loss": self.loss, "components": self.components, "start": self.start,
                "end": self.end}


def find_plateaus(times: np.ndarray, losses: np.ndarray, levels: np.ndarray,
                  flat_slope: float = FLAT_SLOPE, min_span: float = MIN_SPAN) -> list[Plateau]:
    """The plateaus of ``losses`` at ``times`` (increasing, > 0, best log-spaced), named by
    ``levels`` (L_0..L_d): runs of grid intervals with |d log L / d log t| < flat_slope that
    span at least ``min_span`` in ln t; runs named by the same k are merged."""
    t, loss = np.asarray(times, float), np.asarray(losses, float)
    slope = np.abs(np.diff(np.log(loss)) / np.diff(np.log(t)))
    flat = slope < flat_slope
    found: list[Plateau] = []
    start = None
    for index in range(flat.size + 1):
        if index < flat.size and flat[index]:
            start = index if start is None else start
            continue
        if start is not None:
            first, last = start, index            # grid points first..last
            if np.log(t[last] / t[first]) >= min_span:
                where = first + int(np.argmin(slope[first:last]))
                level = float(loss[where])
                distance = np.abs(levels - level) / np.abs(levels)
                k = int(np.argmin(distance)) if distance.min() < MATCH else None
                plateau = Plateau(level, k, float(t[first]), float(t[last]))
                if found and k is not None and found[-1].components == k:
                    previous = found.pop()
                    plateau = Plateau(level, k, previous.start, plateau.end)
                found.append(plateau)
            start = None
    return found


def merged_drop_time(loss: HeadsLoss, theta0: np.ndarray) -> float | None:
    """The analytic time at which merged heads from theta0 make half their loss drop (module
    doc), or None where it does not apply (kq separate, normalised, or non-white covariances).

    With S = s I, Omega = w I: b = n s^2 w sqrt d and lambda = n s kappa, kappa = (n+1) s^2 w
    + d s^2 w + sigma^2 s, z* = b / lambda; each head's (v_h, a_h = tr W_h / sqrt d) grows along
    v = a, so z0 = sum_h ((v_h + a_h) / 2)^2."""
    sx, sw, d, n = loss.sigma_x, loss.sigma_w, loss.d, loss.n
    s, w = float(sx[0, 0]), float(sw[0, 0])
    if loss.kq != "merged" or loss.normalise or not np.array_equal(sx, s * np.eye(d)) \
            or not np.array_equal(sw, w * np.eye(d)):
        return None
    v, W = loss.split(theta0)
    a = np.trace(W, axis1=1, axis2=2) / np.sqrt(d)
    z0 = float(np.sum(((v + a) / 2) ** 2))
    b = n * s * s * w * np.sqrt(d)
    lam = n * s * ((n + 1) * s * s * w + d * s * s * w + loss.sigma**2 * s)
    z_star = b / lam
    if not 0 < z0 < z_star:
        return None
    return float((np.log(z_star / z0 - 1) - np.log(1 + np.sqrt(2))) / (4 * b))
