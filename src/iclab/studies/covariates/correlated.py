"""The optimal one-layer LSA for Gaussian covariates with correlated positions, in closed form.

Positions 1..n are the examples, n+1 the query; Cov(x_i, x_j) = R_ij Sigma_x (vec x =
(R^(1/2) kron Sigma_x^(1/2)) vec z), w ~ N(0, Sigma_w), noise N(0, sigma^2). The nuisance terms
are even in (w, eps), so the optimum is x_q^T Gamma X^T y (docs/theory.md section 12).

Reduction: with B = Sigma_x^(1/2), x_i = B z_i, G = B Gamma B and W = B Sigma_w B the
prediction is z_q^T G sum_i z_i y_i with y_i = (B w)^T z_i + eps_i, B w ~ N(0, W), and the
z_i ~ N(0, I_d) have position covariance R. Write r = R[:n, n], R_c = R[:n, :n],
r_qq = R[n, n] and the position sums (Isserlis' theorem pairs positions, each pair contributing
R of its positions and a Kronecker delta of its coordinates)

    A1 = r^T R_c r,   A2 = |r|^2 tr R_c,   A3 = r_qq (tr R_c)^2,   A4 = r_qq ||R_c||_F^2.

Then L(G) = c0 - 2 <b, G> + Q(G) with c0 = r_qq tr W + sigma^2,

    <b, G> = |r|^2 tr G tr W + (|r|^2 + r_qq tr R_c) tr(G W)
    Q(G) = A1 [tr(G)^2 tr W + 2 tr G tr(G W) + 2 tr(G G^T W) + 2 tr(G G W) + tr W tr(G G)]
         + A2 [2 tr G tr(G W) + 2 tr(G G W)] + (A3 + A4) tr(G W G^T) + A4 tr W tr(G G^T)
         + sigma^2 [|r|^2 (tr(G)^2 + tr(G G)) + r_qq tr R_c tr(G G^T)],

a quadratic in the d^2 entries of G, solved exactly: G* = H^{-1} b, L* = c0 - <b, G*>, and
Gamma* = B^{-1} G* B^{-1}. For W = omega I (Sigma_x = s^2 I with Sigma_w = I, or Sigma_w =
Sigma_x^{-1}) G* = g I by rotation invariance, with

    c = |r|^2 (d^2 + d) + r_qq tr(R_c) d,
    P = A1 (d^3 + 3 d^2 + 4 d) + A2 (2 d^2 + 2 d) + A3 d + A4 (d^2 + d),
    g = omega c / (omega P + sigma^2 c),
    L* = r_qq d omega + sigma^2 - omega^2 c^2 / (omega P + sigma^2 c)

(``isotropic_correlated_optimum``). Independent positions (R = I) give back
``iclab.theory.gaussian``: A1 = A2 = 0, A3 = n^2, A4 = n.

Effective context length n_eff: the number of independent examples (positions with R = I, same
Sigma_x, Sigma_w, sigma) whose optimal loss equals the correlated L*. The independent optimum
L*_ind(m) = tr(Sigma_x Sigma_w) + sigma^2 - m tr(Sigma_x Gamma*(m) Sigma_x Sigma_w),
Gamma*(m) = Sigma_w Sigma_x K(m)^{-1}, K(m) = (m+1) Sigma_x Sigma_w Sigma_x
+ (tr(Sigma_w Sigma_x) + sigma^2) Sigma_x, is defined and strictly decreasing for real m >= 0
(from tr(Sigma_x Sigma_w) + sigma^2 at m = 0 to sigma^2 as m -> infinity), so n_eff solves
L*_ind(n_eff) = L* uniquely (bisection); it is 0 if L* is at least L*_ind(0) and infinity if
L* <= sigma^2. With R = I it is n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from iclab.tasks.covariance import symmetric_sqrt, validate_covariance
from iclab.utils.errors import ConfigError

ISOTROPY_RTOL = 1e-12
BISECTION_STEPS = 200


@dataclass(frozen=True)
class PositionSums:
    """What of R the loss needs: |r|^2, r_qq, tr R_c and the sums A1..A4 (module docstring)."""

    r2: float
    rqq: float
    trace_c: float
    A1: float
    A2: float
    A3: float
    A4: float

    @staticmethod
    def of(R: np.ndarray) -> PositionSums:
        """R: (n+1, n+1), the query last."""
        n = len(R) - 1
        Rc, r, rqq = R[:n, :n], R[:n, n], float(R[n, n])
        r2, trace_c = float(r @ r), float(np.trace(Rc))
        return PositionSums(r2, rqq, trace_c, A1=float(r @ Rc @ r), A2=r2 * trace_c,
                            A3=rqq * trace_c**2, A4=rqq * float(np.sum(Rc * Rc)))


def _check_inputs(
    R: np.ndarray, sigma: float, sigma_x: np.ndarray | None, sigma_w: np.ndarray | None,
    d: int | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    R = np.asarray(R, dtype=np.float64)
    if R.ndim != 2 or R.shape[0] != R.shape[1] or R.shape[0] < 2:
        raise ConfigError(f"position covariance must be (n+1, n+1) with n >= 1, got {R.shape}")
    R = validate_covariance(R, R.shape[0], "position covariance")
    if not math.isfinite(sigma) or sigma < 0:
        raise ConfigError(f"sigma must be a finite number >= 0, got {sigma!r}")
    if sigma_x is None and sigma_w is None and d is None:
        raise ConfigError("give d or at least one covariance")
    dim = d if d is not None else len(sigma_x if sigma_x is not None else sigma_w)  # type: ignore[arg-type]
    sx = np.eye(dim) if sigma_x is None else validate_covariance(sigma_x, dim, "cov_x")
    sw = np.eye(dim) if sigma_w is None else validate_covariance(sigma_w, dim, "cov_w")
    return R, sx, sw


def _quadratic(sums: PositionSums, W: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """H (d^2, d^2) and b (d^2,) with L(G) = c0 - 2 b.g + g^T H g, g = G flattened row-major."""
    d = len(W)
    eye, e, w = np.eye(d), np.eye(d).reshape(-1), W.reshape(-1)
    tr_w = float(np.trace(W))
    trg_trgw = np.outer(e, w) + np.outer(w, e)                               # 2 tr G tr(GW)
    ggw = np.einsum("bB,ca->abBc", eye, W).reshape(d * d, d * d)              # tr(G G W)
    gg = np.einsum("ae,bc->abce", eye, eye).reshape(d * d, d * d)             # tr(G G)
    H = (
        sums.A1 * (tr_w * np.outer(e, e) + trg_trgw + 2 * np.kron(W, eye) + 2 * ggw
                   + tr_w * gg)
        + sums.A2 * (trg_trgw + 2 * ggw)
        + (sums.A3 + sums.A4) * np.kron(eye, W) + sums.A4 * tr_w * np.eye(d * d)
        + sigma**2 * (sums.r2 * (np.outer(e, e) + gg) + sums.rqq * sums.trace_c * np.eye(d * d))
    )
    b = sums.r2 * tr_w * e + (sums.r2 + sums.rqq * sums.trace_c) * w
    return (H + H.T) / 2, b


def correlated_loss(
    gamma: np.ndarray, R: np.ndarray, sigma: float, sigma_x: np.ndarray | None = None,
    sigma_w: np.ndarray | None = None,
) -> float:
    """The exact loss E[(x_q^T Gamma X^T y - y_q)^2] of any Gamma (d, d) under position
    covariance R (n+1, n+1)."""
    gamma = np.asarray(gamma, dtype=np.float64)
    R, sx, sw = _check_inputs(R, sigma, sigma_x, sigma_w, len(gamma))
    B = symmetric_sqrt(sx)
    W, G = B @ sw @ B, B @ gamma @ B
    sums = PositionSums.of(R)
    H, b = _quadratic(sums, W, sigma)
    g = G.reshape(-1)
    return float(sums.rqq * np.trace(W) + sigma**2 - 2 * b @ g + g @ H @ g)


def isotropic_correlated_optimum(
    R: np.ndarray, d: int, sigma: float, omega: float = 1.0
) -> tuple[float, float]:
    """(g, L*) for W = B Sigma_w B = omega I: G* = g I (module docstring). With Sigma_x = s^2 I
    and Sigma_w = I, omega = s^2 and Gamma* = (g / s^2) I."""
    sums = PositionSums.of(np.asarray(R, dtype=np.float64))
    c = sums.r2 * (d * d + d) + sums.rqq * sums.trace_c * d
    P = (sums.A1 * (d**3 + 3 * d * d + 4 * d) + sums.A2 * (2 * d * d + 2 * d) + sums.A3 * d
         + sums.A4 * (d * d + d))
    denominator = omega * P + sigma**2 * c
    return omega * c / denominator, sums.rqq * d * omega + sigma**2 - (omega * c) ** 2 / denominator


def independent_loss_star(
    m: float, sigma: float, sigma_x: np.ndarray, sigma_w: np.ndarray
) -> float:
    """L*_ind(m) of m >= 0 independent examples, m real (the closed form continued in m)."""
    sxsw = sigma_x @ sigma_w
    K = (m + 1) * sxsw @ sigma_x + (np.trace(sxsw) + sigma**2) * sigma_x
    gamma = np.linalg.solve(K.T, (sigma_w @ sigma_x).T).T
    return float(np.trace(sxsw) + sigma**2 - m * np.trace(sigma_x @ gamma @ sxsw))


def effective_context_length(
    loss: float, sigma: float, sigma_x: np.ndarray, sigma_w: np.ndarray
) -> float:
    """n_eff with L*_ind(n_eff) = loss (0 if loss >= L*_ind(0), inf if loss <= sigma^2)."""
    if loss >= independent_loss_star(0.0, sigma, sigma_x, sigma_w):
        return 0.0
    if loss <= sigma**2:
        return math.inf
    low, high = 0.0, 1.0
    while independent_loss_star(high, sigma, sigma_x, sigma_w) > loss:
        low, high = high, 2 * high
        if high > 1e15:
            return math.inf
    for _ in range(BISECTION_STEPS):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        if independent_loss_star(middle, sigma, sigma_x, sigma_w) > loss:
            low = middle
        else:
            high = middle
    return (low + high) / 2


@dataclass(frozen=True)
class CorrelatedOptimum:
    """gamma: (d, d) Gamma*; eta where Gamma* = eta I (else None); loss: L*; n_eff; and
    independent_loss: L* of n independent examples with the same Sigma_x, Sigma_w, sigma."""

    gamma: np.ndarray
    eta: float | None
    loss: float
    isotropic: bool
    n_eff: float
    independent_loss: float


def correlated_optimum(
    R: np.ndarray, sigma: float, sigma_x: np.ndarray | None = None,
    sigma_w: np.ndarray | None = None, d: int | None = None,
) -> CorrelatedOptimum:
    """Gamma*, L* and n_eff for position covariance R (n+1, n+1) (module docstring).
    Covariances default to the identity (then ``d`` must be given)."""
    R, sx, sw = _check_inputs(R, sigma, sigma_x, sigma_w, d)
    B = symmetric_sqrt(sx)
    B_inv = np.linalg.inv(B)
    W = B @ sw @ B
    sums = PositionSums.of(R)
    H, b = _quadratic(sums, (W + W.T) / 2, sigma)
    g = np.linalg.solve(H, b)
    dim = len(sx)
    gamma = B_inv @ g.reshape(dim, dim) @ B_inv
    loss = float(sums.rqq * np.trace(W) + sigma**2 - b @ g)
    eta = float(np.trace(gamma) / dim)
    scale = max(float(np.linalg.norm(gamma)), 1e-300)
    isotropic = bool(np.linalg.norm(gamma - eta * np.eye(dim)) <= ISOTROPY_RTOL * scale)
    n = len(R) - 1
    return CorrelatedOptimum(
        gamma=gamma, eta=eta if isotropic else None, loss=loss, isotropic=isotropic,
        n_eff=effective_context_length(loss, sigma, sx, sw),
        independent_loss=independent_loss_star(float(n), sigma, sx, sw),
    )
