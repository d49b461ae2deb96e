"""Lu et al.'s asymptotic test errors of the ridge-fitted reduced linear attention
(docs/theory.md section 16), in float64.

Conventions (Lu, Letey, Zavatone-Veth, Maiti, Pehlevan, PNAS 2025): tokens x ~ N(0, I_d/d),
tasks w ~ N(0, I_d), labels y = x^T w + eps with eps ~ N(0, rho); context length N = alpha d,
n = tau d^2 pretraining prompts whose tasks come from a pool of k = kappa d tasks drawn once;
Gamma fitted by ridge regression with penalty (n/d) lambda ||Gamma||_F^2. e_ICL is the test
error on fresh tasks, e_IDG on tasks of the pool; both include the label noise rho.

What is computed exactly here:

- the ridgeless limit lambda -> 0 of e_ICL at any kappa, the paper's closed form (its
  Result 1), ``ridgeless_e_icl``; it diverges at tau = 1 (double descent);
- unbounded task diversity kappa = inf at any lambda >= 0: e_ICL = e_IDG, ridge regression on
  d^2 isotropic Gaussian-equivalent features with n = tau d^2 samples (Marchenko-Pastur),
  ``infinite_diversity_error`` (section 16.3, derived here, not in the paper; it agrees
  with Result 1 at kappa = inf).

Finite kappa with lambda > 0, and e_IDG at finite kappa: ``iclab.theory.asymptotic.
deterministic`` (a deterministic equivalent derived in section 16.4); ``iclab.theory.
asymptotic.errors`` picks among them.
"""

from __future__ import annotations

import math

from iclab.utils.errors import ConfigError

MAX_VALUE = 1e6
"""The largest tau, alpha, rho, lambda and finite kappa accepted."""


def check_inputs(tau: float, alpha: float, kappa: float, rho: float, lam: float) -> None:
    """ConfigError (one line naming the bad value) unless tau, alpha > 0, kappa > 0 (inf
    allowed), rho, lam >= 0, all finite and at most MAX_VALUE (kappa may be inf)."""
    for name, value, low_open in (("tau", tau, True), ("alpha", alpha, True),
                                  ("kappa", kappa, True), ("rho", rho, False),
                                  ("lam", lam, False)):
        ok = isinstance(value, int | float) and not math.isnan(value) and (
            value > 0 if low_open else value >= 0) and (
            value <= MAX_VALUE or (name == "kappa" and math.isinf(value)))
        if not ok:
            bound = "> 0" if low_open else ">= 0"
            extra = " or inf" if name == "kappa" else ""
            raise ConfigError(f"--{name} must be a number {bound} and <= {MAX_VALUE:g}"
                              f"{extra}, got {value}")


def stieltjes_mp(x: float, kappa: float) -> float:
    """M_kappa(x) = lim (1/d) tr (W^T W / k + x I)^-1 for W a (k, d) standard Gaussian matrix,
    k = kappa d, x > 0: the Marchenko-Pastur law of ratio 1/kappa at -x; kappa = inf gives
    1/(1 + x). The root of (x/kappa) M^2 + (x + 1 - 1/kappa) M - 1 = 0 that is positive,
    in the form free of cancellation for either sign of the linear coefficient."""
    if math.isinf(kappa):
        return 1.0 / (1.0 + x)
    b = x + 1.0 - 1.0 / kappa
    root = math.sqrt(b * b + 4.0 * x / kappa)
    return 2.0 / (b + root) if b >= 0 else (root - b) * kappa / (2.0 * x)


def ridgeless_e_icl(tau: float, alpha: float, kappa: float, rho: float) -> float:
    """Lu et al.'s Result 1: e_ICL of the ridgeless (lambda -> 0) fit; x* = (1 + rho)/alpha,
    m* = M_kappa(x*), mu* = x* M_{kappa/tau}(x*). For tau < 1 (fewer prompts than the d^2
    parameters: the fit interpolates) and tau > 1; +inf at tau = 1."""
    if tau == 1.0:
        return math.inf
    x = (1.0 + rho) / alpha
    m = stieltjes_mp(x, kappa)
    mu = x * stieltjes_mp(x, kappa / tau)
    if tau < 1.0:
        return (tau * (1.0 + x) / (1.0 - tau)
                * (1.0 - tau * (1.0 - mu) ** 2 - (x - rho) / x * mu)
                - 2.0 * tau * (1.0 - mu) + rho + 1.0)
    k_star = 1.0 if math.isinf(kappa) else 1.0 / (1.0 - kappa * (m / (kappa + m)) ** 2)
    return ((k_star - 1.0 / (tau - 1.0)) * (1.0 + x) * (x * m) ** 2
            + (3.0 - 2.0 * tau) / (tau - 1.0) * m * x ** 2
            + ((1.0 + rho) / (tau - 1.0) * m + 1.0) * x
            + rho * m / (tau - 1.0) + rho)


def mp_resolvent(gamma: float, lam: float) -> tuple[float, float]:
    """(lam m, D) for the Marchenko-Pastur law of ratio gamma = p/n (unit variance) at
    z = -lam, lam > 0: m = int dF(t)/(t + lam) is the positive root of gamma lam m^2 +
    b m - 1 = 0 with b = 1 - gamma + lam, and D = 2 gamma lam m + b = sqrt(b^2 + 4 gamma lam)
    (the derivative's denominator: m' = dm/dz = (gamma m^2 + m)/D). lam m rather than m
    keeps the ridgeless end (m ~ 1/lam when gamma > 1) free of cancellation."""
    b = 1.0 - gamma + lam
    root = math.sqrt(b * b + 4.0 * gamma * lam)
    lam_m = 2.0 * lam / (b + root) if b >= 0 else (root - b) / (2.0 * gamma)
    return lam_m, root


def infinite_diversity_error(tau: float, alpha: float, rho: float, lam: float) -> float:
    """e_ICL = e_IDG at kappa = inf (section 16.3). Gaussian equivalence: the prediction is
    x^T Gamma h with h = (d/N) sum_i y_i x_i ~ w + sqrt(x*) g, x* = (1 + rho)/alpha, so the
    features are d^2 isotropic ones of variance s = 1 + x* (in the sqrt(d) x scale), the
    target's explained share r^2 = 1/s and the rest noise sigma^2 = 1 + rho - 1/s. Ridge with
    (1/n) loss + lam ||beta||^2, gamma = 1/tau, l = lam/s: test error sigma^2 + r^2 l^2 m' +
    sigma^2 gamma (m - l m') at z = -l (Dobriban and Wager 2018; Hastie et al. 2022), where
    the quadratic gives l^2 m' = (l + (gamma - 1) l m)/D and m - l m' = (1 - l m)/D; lam = 0
    by its limit (Result 1 at kappa = inf)."""
    if lam == 0.0:
        return ridgeless_e_icl(tau, alpha, math.inf, rho)
    s = 1.0 + (1.0 + rho) / alpha
    signal, noise = 1.0 / s, 1.0 + rho - 1.0 / s
    gamma, scaled = 1.0 / tau, lam / s
    lam_m, root = mp_resolvent(gamma, scaled)
    bias = (scaled + (gamma - 1.0) * lam_m) / root
    return noise + signal * bias + noise * gamma * (1.0 - lam_m) / root
