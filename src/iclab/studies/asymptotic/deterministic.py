"""e_ICL and e_IDG at any (tau, alpha, kappa, rho, lambda) from a deterministic equivalent of
the ridge fit (docs/theory.md section 16.4, derived there; at lambda -> 0 it reproduces Lu et
al.'s Result 1 at every kappa, at kappa = inf the isotropic ridge risk of section 16.3).

With R = W^T W / k the pool's second moment (Marchenko-Pastur, ratio 1/kappa), x* = (1 +
rho)/alpha and M(z) = M_kappa(z) its resolvent trace at -z, the fit is Gamma ~ R (R + z)^-1
where z = x* + lambda/c solves

    c = 1 - (M(z)/tau) (kappa/(kappa + M(z)) + x*),    c (z - x*) = lambda,

c in (0, 1] the leave-one-out shrinkage 1/(1 + S) of a prompt's residual. Then, with the
spectral integrals of R in closed form through M and M',

    v   = rho + int t (z^2 + x* t)/(t + z)^2 dF      (the pool error of the mean fit)
    e_IDG = v / (1 - (1/tau) int (t + x*)^2/(t + z)^2 dF)
    e_ICL = rho + int (z^2 + x* t^2)/(t + z)^2 dF + (1 + x*) (e_IDG/tau) int (t + x*)/(t + z)^2 dF.
"""

from __future__ import annotations

import math

from iclab.studies.asymptotic.formulas import mp_root, pool_share, stieltjes_mp

MAX_DOUBLINGS = 2100
"""Doublings of the bracket of the effective ridge (from 1e-300 past 1e308: always enough)."""


def spectral_integrals(z: float, kappa: float) -> tuple[float, float, float, float]:
    """(M, P, T1, T2): M = int dF/(t + z), P = int dF/(t + z)^2, T1 = int t dF/(t + z)^2,
    T2 = int t^2 dF/(t + z)^2 for the Marchenko-Pastur law of ratio 1/kappa (kappa = inf:
    the point mass at 1), each a product or sum of positive numbers: with G = 1 - z M and D
    (``pool_share``, ``mp_root``), P = -M' = (M^2/kappa + M)/D, T1 = -G' = G/D and
    T2 = G + z G' = G (D - z)/D, D - z = (2 z (1 + 1/kappa) + (1 - 1/kappa)^2)/(D + z)
    (D^2 - z^2 expanded)."""
    m, root, share = stieltjes_mp(z, kappa), mp_root(z, kappa), pool_share(z, kappa)
    inverse = 0.0 if math.isinf(kappa) else 1.0 / kappa
    excess = (2.0 * z * (1.0 + inverse) + (1.0 - inverse) ** 2) / (root + z)
    return m, (m * m * inverse + m) / root, share / root, share * excess / root


def shrinkage(z: float, tau: float, kappa: float, x: float) -> float:
    """c(z) = 1 - (M(z)/tau) (kappa/(kappa + M(z)) + x*) (kappa = inf: the fraction is 1)."""
    m = stieltjes_mp(z, kappa)
    share = 1.0 if math.isinf(kappa) else kappa / (kappa + m)
    return 1.0 - m / tau * (share + x)


def _bisect(function: object, low: float, high: float) -> float:
    """The root of an increasing function (a callable) on [low, high], to the last bit."""
    assert callable(function)
    for _ in range(2200):
        middle = 0.5 * (low + high)
        if middle in (low, high):
            break
        if function(middle) > 0:
            high = middle
        else:
            low = middle
    return 0.5 * (low + high)


def ridge_excess(tau: float, kappa: float, x: float, lam: float) -> float:
    """delta = z - x* >= 0 for the effective ridge z: the root of c(x* + delta) delta = lam
    (lam > 0), or lam = 0: 0 where c(x*) > 0 (tau > 1), else the root of c(x* + delta) = 0
    (tau < 1: the fit interpolates, c -> 0). Solved for delta, not z, so that a small delta
    beside a large x* keeps its digits; the bracket doubles from 1 (a bounded number of
    times)."""
    if lam == 0.0:
        if shrinkage(x, tau, kappa, x) > 0:
            return 0.0
        def target(delta: float) -> float:
            return shrinkage(x + delta, tau, kappa, x)
    else:
        def target(delta: float) -> float:
            return shrinkage(x + delta, tau, kappa, x) * delta - lam
    high = 1.0
    for _ in range(MAX_DOUBLINGS):
        if target(high) > 0:
            return _bisect(target, 0.0, high)
        high *= 2.0
    raise ArithmeticError(f"no effective ridge below {high:g}")  # unreachable: c -> 1


def effective_ridge(tau: float, kappa: float, x: float, lam: float) -> float:
    """z = x* + delta (``ridge_excess``)."""
    return x + ridge_excess(tau, kappa, x, lam)


def ridge_errors(tau: float, alpha: float, kappa: float, rho: float,
                 lam: float) -> tuple[float, float]:
    """(e_ICL, e_IDG) of the deterministic equivalent (module docstring); inputs checked by
    the caller (tau = 1 with lam = 0 diverges). Every integral is a sum of positive terms
    (``spectral_integrals``): int (t + x*)^2/(t + z)^2 = T2 + 2 x* T1 + x*^2 P, int (t +
    x*)/(t + z)^2 = T1 + x* P, int (z^2 + x* t^2)/(t + z)^2 = z^2 P + x* T2."""
    x = (1.0 + rho) / alpha
    z = effective_ridge(tau, kappa, x, lam)
    _, square, first, second = spectral_integrals(z, kappa)
    pool = rho + z * z * first + x * second
    spread = second + 2.0 * x * first + x * x * square
    e_idg = pool / (1.0 - spread / tau)
    weight = first + x * square
    e_icl = rho + z * z * square + x * second + (1.0 + x) * e_idg / tau * weight
    return e_icl, e_idg
