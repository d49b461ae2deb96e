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

Finite kappa with lambda > 0, and e_IDG at finite kappa: ``iclab.studies.asymptotic.
deterministic`` (a deterministic equivalent derived in section 16.4); ``iclab.theory.
asymptotic.errors`` picks among them.
"""

from __future__ import annotations

import math

from iclab.utils.errors import ConfigError

MAX_VALUE = 1e6
"""The largest tau, alpha, rho, lambda and finite kappa accepted."""
MIN_VALUE = 1e-6
"""The smallest tau, alpha and kappa accepted (n = tau d^2 >= 1, N = alpha d >= 1 and
k = kappa d >= 1 need no less at d up to 1e6); the closed forms are checked against a
high-precision evaluation at the corners of this box (tests/theory/asymptotic)."""


def check_inputs(tau: float, alpha: float, kappa: float, rho: float, lam: float) -> None:
    """ConfigError (one line naming the bad value) unless tau, alpha, kappa are from
    MIN_VALUE to MAX_VALUE (kappa may be inf), rho and lam from 0 to MAX_VALUE."""
    for name, value, low in (("tau", tau, MIN_VALUE), ("alpha", alpha, MIN_VALUE),
                             ("kappa", kappa, MIN_VALUE), ("rho", rho, 0.0),
                             ("lam", lam, 0.0)):
        ok = isinstance(value, int | float) and not math.isnan(value) and value >= low and (
            value <= MAX_VALUE or (name == "kappa" and math.isinf(value)))
        if not ok:
            extra = " or inf" if name == "kappa" else ""
            raise ConfigError(f"--{name} must be a number from {low:g} to {MAX_VALUE:g}"
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


def pool_share(x: float, kappa: float) -> float:
    """G_kappa(x) = 1 - x M_kappa(x) = int t/(t + x) dF (the Marchenko-Pastur law of ratio
    1/kappa), x > 0, without cancellation: G solves G^2/kappa - (x + 1 + 1/kappa) G + 1 = 0
    (substitute M = (1 - G)/x in M's quadratic), the smaller root 2/(B + D) with B = x + 1 +
    1/kappa and D = sqrt(B^2 - 4/kappa) = sqrt((x + (1 - 1/sqrt kappa)^2)(x + (1 + 1/sqrt
    kappa)^2)), a product of positive factors; kappa = inf: 1/(1 + x)."""
    if math.isinf(kappa):
        return 1.0 / (1.0 + x)
    return 2.0 / (x + 1.0 + 1.0 / kappa + mp_root(x, kappa))


def mp_root(x: float, kappa: float) -> float:
    """D = sqrt((x + 1 + 1/kappa)^2 - 4/kappa) = sqrt(b^2 + 4x/kappa) (b = x + 1 - 1/kappa)
    as a product of positive factors (kappa = inf: 1 + x)."""
    if math.isinf(kappa):
        return 1.0 + x
    root = 1.0 / math.sqrt(kappa)
    return math.sqrt(x + (1.0 - root) ** 2) * math.sqrt(x + (1.0 + root) ** 2)


def ridgeless_e_icl(tau: float, alpha: float, kappa: float, rho: float) -> float:
    """Lu et al.'s Result 1: e_ICL of the ridgeless (lambda -> 0) fit; x* = (1 + rho)/alpha,
    m* = M_kappa(x*), mu* = x* M_{kappa/tau}(x*). For tau < 1 (fewer prompts than the d^2
    parameters: the fit interpolates) and tau > 1; +inf at tau = 1.

    Evaluated in a form without cancellation (docs/theory.md section 16.2): with nu = 1 - mu*
    = G_{kappa/tau}(x*) and g = 1 - x* m* = G_kappa(x*) (``pool_share``), the tau < 1 branch
    is tau (1 + x*)/(1 - tau) (nu (1 - tau nu) + rho mu*/x*) - 2 tau nu + 1 + rho, and the
    tau > 1 branch, using 1 - (1 + x*) m* = -(m*/kappa) g (M's quadratic),
    x* [g (1 + (m*/kappa)(1 - g)) + (k* - 1)(1 - g)(1 + (m*/kappa) g)] + rho
    + m* (x* (1 - x* m* g/kappa) + rho (1 + x*))/(tau - 1): every term but the last
    bracket's (bounded by the rest) is positive (rho mu*/x* = rho M_{kappa/tau}(x*)); the
    paper's form cancels O(x*) terms to O(1) at small alpha."""
    if tau == 1.0:
        return math.inf
    x = (1.0 + rho) / alpha
    if tau < 1.0:
        nu = pool_share(x, kappa / tau)
        mu_over_x = stieltjes_mp(x, kappa / tau)
        return (tau * (1.0 + x) / (1.0 - tau) * (nu * (1.0 - tau * nu) + rho * mu_over_x)
                - 2.0 * tau * nu + 1.0 + rho)
    m, g = stieltjes_mp(x, kappa), pool_share(x, kappa)
    ratio = 0.0 if math.isinf(kappa) else m / kappa
    share = 0.0 if math.isinf(kappa) else m / (kappa + m)
    excess = kappa * share ** 2 / (1.0 - kappa * share ** 2) if share else 0.0  # k* - 1
    main = x * (g * (1.0 + ratio * (1.0 - g)) + excess * (1.0 - g) * (1.0 + ratio * g))
    return main + rho + m * (x * (1.0 - x * ratio * g) + rho * (1.0 + x)) / (tau - 1.0)


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
    x = (1.0 + rho) / alpha
    s = 1.0 + x
    signal, noise = 1.0 / s, rho + x / s
    gamma, scaled = 1.0 / tau, lam / s
    lam_m, root = mp_resolvent(gamma, scaled)
    bias = (scaled + (gamma - 1.0) * lam_m) / root
    return noise + signal * bias + noise * gamma * (1.0 - lam_m) / root
