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

from iclab.studies.asymptotic.formulas import stieltjes_mp


def stieltjes_with_derivative(z: float, kappa: float) -> tuple[float, float]:
    """(M, M') = (int dF/(t + z), d/dz of it) for the Marchenko-Pastur law of ratio 1/kappa
    (kappa = inf: the point mass at 1); M' = -(M^2/kappa + M)/sqrt(b^2 + 4z/kappa),
    b = z + 1 - 1/kappa, by differentiating (z/kappa) M^2 + b M - 1 = 0."""
    m = stieltjes_mp(z, kappa)
    if math.isinf(kappa):
        return m, -m * m
    b = z + 1.0 - 1.0 / kappa
    return m, -(m * m / kappa + m) / math.sqrt(b * b + 4.0 * z / kappa)


def shrinkage(z: float, tau: float, kappa: float, x: float) -> float:
    """c(z) = 1 - (M(z)/tau) (kappa/(kappa + M(z)) + x*) (kappa = inf: the fraction is 1)."""
    m = stieltjes_mp(z, kappa)
    share = 1.0 if math.isinf(kappa) else kappa / (kappa + m)
    return 1.0 - m / tau * (share + x)


def _bisect(function: object, low: float, high: float) -> float:
    """The root of an increasing function (a callable) on [low, high], to the last bit."""
    assert callable(function)
    for _ in range(400):
        middle = 0.5 * (low + high)
        if middle in (low, high):
            break
        if function(middle) > 0:
            high = middle
        else:
            low = middle
    return 0.5 * (low + high)


def effective_ridge(tau: float, kappa: float, x: float, lam: float) -> float:
    """z >= x*: the root of c(z) (z - x*) = lam (lam > 0), or lam = 0: x* where c(x*) > 0
    (tau > 1), else the root of c(z) = 0 (tau < 1: the fit interpolates, c -> 0)."""
    if lam == 0.0:
        if shrinkage(x, tau, kappa, x) > 0:
            return x
        def target(z: float) -> float:
            return shrinkage(z, tau, kappa, x)
    else:
        def target(z: float) -> float:
            return shrinkage(z, tau, kappa, x) * (z - x) - lam
    high = x + 1.0
    while target(high) <= 0:
        high = x + 2.0 * (high - x)
    return _bisect(target, x, high)


def ridge_errors(tau: float, alpha: float, kappa: float, rho: float,
                 lam: float) -> tuple[float, float]:
    """(e_ICL, e_IDG) of the deterministic equivalent (module docstring); inputs checked by
    the caller (tau = 1 with lam = 0 diverges)."""
    x = (1.0 + rho) / alpha
    z = effective_ridge(tau, kappa, x, lam)
    m, dm = stieltjes_with_derivative(z, kappa)
    # int t/(t+z)^2 = M + z M', int t^2/(t+z)^2 = 1 - 2 z M - z^2 M', int 1/(t+z)^2 = -M'
    first, second = m + z * dm, 1.0 - 2.0 * z * m - z * z * dm
    pool = rho + z * z * first + x * second
    spread = 1.0 + 2.0 * (x - z) * m - (x - z) ** 2 * dm  # int (t + x*)^2/(t + z)^2
    e_idg = pool / (1.0 - spread / tau)
    weight = m - (x - z) * dm  # int (t + x*)/(t + z)^2
    e_icl = rho - z * z * dm + x * second + (1.0 + x) * e_idg / tau * weight
    return e_icl, e_idg
