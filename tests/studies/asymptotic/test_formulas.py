"""Lu et al.'s asymptotic errors (docs/theory.md section 16) against independent derivations:
the Marchenko-Pastur integrals done numerically here, the classical ridgeless risks at
kappa = inf, and the population limit tau -> inf at finite kappa."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclab.studies.asymptotic.deterministic import ridge_errors
from iclab.studies.asymptotic.errors import asymptotic_errors
from iclab.studies.asymptotic.formulas import (
    infinite_diversity_error,
    ridgeless_e_icl,
)
from iclab.utils.errors import ConfigError


def mp_integral(f, ratio: float, nodes: int = 4001) -> float:  # type: ignore[no-untyped-def]
    """int f(t) dF(t) for the Marchenko-Pastur law of ``ratio`` (unit variance): the density
    sqrt((b - t)(t - a))/(2 pi ratio t) on [a, b] = [(1 -+ sqrt(ratio))^2] (the substitution
    t = c + r cos(theta) makes the integrand smooth; the midpoint rule in theta) plus the
    atom 1 - 1/ratio at 0 when ratio > 1."""
    a, b = (1 - math.sqrt(ratio)) ** 2, (1 + math.sqrt(ratio)) ** 2
    theta = (np.arange(nodes) + 0.5) * math.pi / nodes  # midpoint rule: smooth, periodic
    t = (a + b) / 2 + (b - a) / 2 * np.cos(theta)
    weights = ((b - a) / 2) ** 2 * np.sin(theta) ** 2 / (2 * math.pi * ratio * t)
    integral = float(np.sum(f(t) * weights) * math.pi / nodes)
    return integral + (max(0.0, 1 - 1 / ratio) * float(f(np.zeros(1))[0]) if ratio > 1 else 0)


def ridge_risk_by_integral(tau: float, alpha: float, rho: float, lam: float) -> float:
    """Test error of ridge on isotropic features (kappa = inf), bias and variance as MP
    integrals: sigma^2 + r^2 int l^2/(t + l)^2 dF + sigma^2 gamma int t/(t + l)^2 dF."""
    s = 1 + (1 + rho) / alpha
    signal, noise, gamma, scaled = 1 / s, 1 + rho - 1 / s, 1 / tau, lam / s
    bias = mp_integral(lambda t: scaled ** 2 / (t + scaled) ** 2, gamma)
    variance = mp_integral(lambda t: t / (t + scaled) ** 2, gamma)
    return noise + signal * bias + noise * gamma * variance


@pytest.mark.parametrize("tau, alpha, rho, lam", [
    (0.5, 1.0, 0.1, 0.5), (2.0, 0.5, 0.0, 0.05), (0.9, 2.0, 1.0, 0.01), (1.0, 1.0, 0.25, 0.1),
    (5.0, 4.0, 0.5, 2.0)])
def test_infinite_diversity_matches_mp_integrals(tau: float, alpha: float, rho: float,
                                                 lam: float) -> None:
    expected = ridge_risk_by_integral(tau, alpha, rho, lam)
    assert infinite_diversity_error(tau, alpha, rho, lam) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("tau", [0.2, 0.5, 0.9, 1.1, 2.0, 10.0])
@pytest.mark.parametrize("alpha, rho", [(1.0, 0.1), (0.5, 0.0), (4.0, 1.0)])
def test_lambda_to_zero_reproduces_result_1(tau: float, alpha: float, rho: float) -> None:
    """The kappa = inf ridge formula at lam = 1e-13 is the paper's closed form (Result 1) at
    kappa = inf to 1e-9 relative (the lam -> 0 error is O(lam/|1 - tau|)); at tau = 1 +- 0.01,
    next to the divergence, to 1e-6."""
    closed = ridgeless_e_icl(tau, alpha, math.inf, rho)
    assert infinite_diversity_error(tau, alpha, rho, 1e-13) == pytest.approx(closed, rel=1e-9)
    for near in (0.99, 1.01):
        assert infinite_diversity_error(near, alpha, rho, 1e-13) == pytest.approx(
            ridgeless_e_icl(near, alpha, math.inf, rho), rel=1e-6)


@pytest.mark.parametrize("tau", [0.3, 0.7, 1.5, 3.0])
@pytest.mark.parametrize("alpha, rho", [(1.0, 0.1), (2.0, 0.5)])
def test_kappa_infinity_is_classical_ridgeless_risk(tau: float, alpha: float,
                                                    rho: float) -> None:
    """kappa = inf, lam -> 0: min-norm least squares on d^2 isotropic features with explained
    share r^2 = 1/(1 + x*) and noise sigma^2 = 1 + rho - r^2: sigma^2/(1 - tau) + r^2 (1 - tau)
    below tau = 1, sigma^2 tau/(tau - 1) above (Hastie et al. 2022, isotropic case); the
    paper's finite-kappa formula approaches it as kappa grows."""
    r2 = 1 / (1 + (1 + rho) / alpha)
    noise = 1 + rho - r2
    expected = noise / (1 - tau) + r2 * (1 - tau) if tau < 1 else noise * tau / (tau - 1)
    assert ridgeless_e_icl(tau, alpha, math.inf, rho) == pytest.approx(expected, rel=1e-12)
    assert ridgeless_e_icl(tau, alpha, 1e8, rho) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("kappa", [0.25, 0.5, 1.0, 2.0, 8.0])
@pytest.mark.parametrize("alpha, rho", [(1.0, 0.1), (0.5, 1.0)])
def test_tau_infinity_is_the_population_fit_of_the_pool(kappa: float, alpha: float,
                                                        rho: float) -> None:
    """tau -> inf: Gamma -> R (R + x* I)^-1 with R = W^T W/k the pool's second moment (MP law,
    ratio 1/kappa), so e_ICL -> rho + int [1 - 2t/(t + x*) + (1 + x*) t^2/(t + x*)^2] dF."""
    x = (1 + rho) / alpha
    expected = rho + mp_integral(
        lambda t: 1 - 2 * t / (t + x) + (1 + x) * t ** 2 / (t + x) ** 2, 1 / kappa)
    assert ridgeless_e_icl(1e9, alpha, kappa, rho) == pytest.approx(expected, rel=1e-6)


def test_double_descent_peak_at_tau_one() -> None:
    """Result 1 diverges on both sides of tau = 1 and is finite away from it."""
    for kappa in (0.5, 2.0, math.inf):
        near = [ridgeless_e_icl(tau, 1.0, kappa, 0.1) for tau in (0.999, 1.001)]
        far = [ridgeless_e_icl(tau, 1.0, kappa, 0.1) for tau in (0.5, 2.0)]
        assert min(near) > 50 * max(far)


def test_asymptotic_errors_cases() -> None:
    both = asymptotic_errors(2.0, 1.0, math.inf, 0.1, 0.3)
    assert both.e_icl == both.e_idg == infinite_diversity_error(2.0, 1.0, 0.1, 0.3)
    ridgeless = asymptotic_errors(2.0, 1.0, 0.5, 0.1, 0.0)
    assert ridgeless.e_icl == ridgeless_e_icl(2.0, 1.0, 0.5, 0.1)
    assert 0 < ridgeless.e_idg < ridgeless.e_icl
    with pytest.raises(ConfigError, match="diverges"):
        asymptotic_errors(1.0, 1.0, 0.5, 0.1, 0.0)
    with pytest.raises(ConfigError, match="--alpha"):
        asymptotic_errors(1.0, 0.0, 0.5, 0.1, 0.0)


@pytest.mark.parametrize("kappa", [0.1, 0.25, 0.5, 1.0, 2.0, 8.0, 100.0])
@pytest.mark.parametrize("tau", [0.2, 0.5, 0.9, 1.1, 2.0, 10.0])
def test_deterministic_equivalent_reproduces_result_1(kappa: float, tau: float) -> None:
    """The deterministic equivalent (section 16.4, derived without Result 1) at lam = 1e-12
    is the paper's closed form at every kappa, both sides of tau = 1, to 1e-9 relative."""
    e_icl, _ = ridge_errors(tau, 1.0, kappa, 0.1, 1e-12)
    assert e_icl == pytest.approx(ridgeless_e_icl(tau, 1.0, kappa, 0.1), rel=1e-9)


@pytest.mark.parametrize("tau, alpha, rho, lam", [
    (0.5, 1.0, 0.1, 0.5), (2.0, 0.5, 0.0, 0.05), (1.0, 1.0, 0.25, 0.1)])
def test_deterministic_equivalent_at_infinite_diversity(tau: float, alpha: float, rho: float,
                                                        lam: float) -> None:
    """kappa = inf: both errors are the isotropic ridge risk of section 16.3."""
    e_icl, e_idg = ridge_errors(tau, alpha, math.inf, rho, lam)
    expected = ridge_risk_by_integral(tau, alpha, rho, lam)
    assert e_icl == pytest.approx(expected, rel=1e-6) and e_idg == pytest.approx(expected,
                                                                                 rel=1e-6)


@pytest.mark.parametrize("kappa", [0.25, 1.0, 4.0])
@pytest.mark.parametrize("lam", [0.0, 0.3])
def test_deterministic_equivalent_at_infinite_tau(kappa: float, lam: float) -> None:
    """tau -> inf: the fit is the population ridge fit to the pool, minimising
    tr((I - G) R (I - G)^T) + (x* + lam) ||G||^2 (the penalty (n/d) lam grows with n like the
    loss): G = R (R + z)^-1 with z = x* + lam. Per eigenvalue t of R its pool error is
    (z^2 t + x* t^2)/(t + z)^2 and its fresh-task error (z^2 + x* t^2)/(t + z)^2, plus rho."""
    x, z = 1.1, 1.1 + lam
    e_icl, e_idg = ridge_errors(1e9, 1.0, kappa, 0.1, lam)
    assert e_idg == pytest.approx(
        0.1 + mp_integral(lambda t: (z * z * t + x * t * t) / (t + z) ** 2, 1 / kappa),
        rel=1e-6)
    assert e_icl == pytest.approx(
        0.1 + mp_integral(lambda t: (z * z + x * t * t) / (t + z) ** 2, 1 / kappa), rel=1e-6)


def test_ridge_helps_at_the_peak_and_idg_is_below_icl() -> None:
    """At tau = 1 a penalty keeps both errors finite; the pool's error is below the fresh
    tasks' (the fit has seen the pool)."""
    for kappa in (0.5, 2.0):
        e_icl, e_idg = ridge_errors(1.0, 1.0, kappa, 0.1, 0.1)
        assert math.isfinite(e_icl) and 0 < e_idg < e_icl < ridgeless_e_icl(0.99, 1.0, kappa,
                                                                             0.1)
