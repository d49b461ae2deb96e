"""The asymptotic errors in float64 against the paper's own forms evaluated with 80 digits
(mpmath): Result 1 as printed in docs/theory.md section 16.2, the isotropic ridge risk of 16.3
and the deterministic equivalent of 16.4 with M and M' (the forms that cancel at small alpha),
over the corners of the accepted box; past the box, one ConfigError."""

from __future__ import annotations

import itertools
import math
from typing import Any

import mpmath  # type: ignore[import-untyped]
import numpy as np
import pytest

from iclab.studies.asymptotic.errors import asymptotic_errors
from iclab.studies.asymptotic.formulas import MAX_VALUE, MIN_VALUE
from iclab.utils.errors import ConfigError

mp = mpmath.mp
INF = math.inf


def stieltjes(x: Any, kappa: float) -> Any:
    if kappa == INF:
        return 1 / (1 + x)
    k = mpmath.mpf(kappa)
    b = x + 1 - 1 / k
    return 2 / (b + mpmath.sqrt(b * b + 4 * x / k))


def result_1(tau: Any, x: Any, kappa: float, rho: Any) -> Any:
    m = stieltjes(x, kappa)
    mu = x * stieltjes(x, kappa if kappa == INF else mpmath.mpf(kappa) / tau)
    if tau < 1:
        return (tau * (1 + x) / (1 - tau) * (1 - tau * (1 - mu) ** 2 - (x - rho) / x * mu)
                - 2 * tau * (1 - mu) + rho + 1)
    k_star = 1 if kappa == INF else 1 / (1 - kappa * (m / (kappa + m)) ** 2)
    return ((k_star - 1 / (tau - 1)) * (1 + x) * (x * m) ** 2
            + (3 - 2 * tau) / (tau - 1) * m * x ** 2
            + ((1 + rho) / (tau - 1) * m + 1) * x + rho * m / (tau - 1) + rho)


def isotropic_ridge(tau: Any, x: Any, rho: Any, lam: Any) -> Any:
    s = 1 + x
    noise, gamma, scaled = 1 + rho - 1 / s, 1 / tau, lam / s
    b = 1 - gamma + scaled
    m = (-b + mpmath.sqrt(b * b + 4 * gamma * scaled)) / (2 * gamma * scaled)
    dm = (gamma * m * m + m) / mpmath.sqrt(b * b + 4 * gamma * scaled)
    return noise + scaled ** 2 * dm / s + noise * gamma * (m - scaled * dm)


def deterministic(tau: Any, x: Any, kappa: float, rho: Any, lam: Any) -> tuple[Any, Any]:
    def shrink(z: Any) -> Any:
        m = stieltjes(z, kappa)
        return 1 - m / tau * (kappa / (kappa + m) + x)

    def target(z: Any) -> Any:
        return shrink(z) if lam == 0 else shrink(z) * (z - x) - lam

    z = x
    if lam > 0 or shrink(x) <= 0:
        low, high = x, x + 1
        while target(high) <= 0:
            high = x + 2 * (high - x)
        for _ in range(400):
            middle = (low + high) / 2
            low, high = (low, middle) if target(middle) > 0 else (middle, high)
        z = (low + high) / 2
    m = stieltjes(z, kappa)
    k = mpmath.mpf(kappa)
    b = z + 1 - 1 / k
    dm = -(m * m / k + m) / mpmath.sqrt(b * b + 4 * z / k)
    second = 1 - 2 * z * m - z * z * dm
    pool = rho + z * z * (m + z * dm) + x * second
    e_idg = pool / (1 - (1 + 2 * (x - z) * m - (x - z) ** 2 * dm) / tau)
    e_icl = rho - z * z * dm + x * second + (1 + x) * e_idg / tau * (m - (x - z) * dm)
    return e_icl, e_idg


def reference(tau: float, alpha: float, kappa: float, rho: float,
              lam: float) -> tuple[float, float]:
    """(e_ICL, e_IDG) as iclab reports them, with 80 digits."""
    with mp.workdps(80):
        t, r, la = mpmath.mpf(tau), mpmath.mpf(rho), mpmath.mpf(lam)
        x = (1 + r) / mpmath.mpf(alpha)
        if kappa == INF:
            value = result_1(t, x, INF, r) if lam == 0 else isotropic_ridge(t, x, r, la)
            return float(value), float(value)
        e_icl, e_idg = deterministic(t, x, kappa, r, la)
        return float(result_1(t, x, kappa, r) if lam == 0 else e_icl), float(e_idg)


@pytest.mark.parametrize("tau", [MIN_VALUE, 0.5, 0.999, 1.001, 3.0, MAX_VALUE])
def test_corners_of_the_box_match_80_digits(tau: float) -> None:
    for alpha, kappa, rho, lam in itertools.product(
            [MIN_VALUE, 1.0, MAX_VALUE], [MIN_VALUE, 0.3, 4.0, MAX_VALUE, INF],
            [0.0, MAX_VALUE], [0.0, 1e-9, MAX_VALUE]):
        if lam == 0 and tau == 1:
            continue
        got = asymptotic_errors(tau, alpha, kappa, rho, lam)
        expected = reference(tau, alpha, kappa, rho, lam)
        assert got.e_icl == pytest.approx(expected[0], rel=1e-10), (alpha, kappa, rho, lam)
        assert got.e_idg == pytest.approx(expected[1], rel=1e-10), (alpha, kappa, rho, lam)


@pytest.mark.parametrize("kappa", [1.0, INF])
def test_alpha_from_1e_minus_300_is_exact_or_refused(kappa: float) -> None:
    """The issue's sweep: tau = 0.5, alpha from 1e-300 to 1e3 (the paper's form cancels to
    1.0 and 1e284 here at small alpha): within 1e-8 of 80 digits, or one ConfigError past the
    box's edge, and accepted at the edge itself."""
    accepted = 0
    for alpha in [*np.geomspace(1e-300, 1e3, 61), *np.geomspace(MIN_VALUE, 1e3, 19), 1e-10,
                  1e-20]:
        alpha = float(alpha)
        if alpha < MIN_VALUE:
            with pytest.raises(ConfigError, match="--alpha must be a number from 1e-06"):
                asymptotic_errors(0.5, alpha, kappa, 0.0, 0.0)
            continue
        accepted += 1
        got = asymptotic_errors(0.5, alpha, kappa, 0.0, 0.0)
        expected = reference(0.5, alpha, kappa, 0.0, 0.0)
        assert got.e_icl == pytest.approx(expected[0], rel=1e-8)
        assert got.e_idg == pytest.approx(expected[1], rel=1e-8)
    assert accepted >= 19


@pytest.mark.parametrize("name, position", [("tau", 0), ("alpha", 1), ("kappa", 2)])
def test_box_edges(name: str, position: int) -> None:
    """tau, alpha and kappa: accepted at MIN_VALUE and MAX_VALUE, refused just past each."""
    base = [0.5, 1.0, 2.0, 0.1, 0.1]
    for edge in (MIN_VALUE, MAX_VALUE):
        point = list(base)
        point[position] = edge
        assert math.isfinite(asymptotic_errors(*point).e_icl)
    for past in (MIN_VALUE * 0.999, MAX_VALUE * 1.001, 1e-300):
        point = list(base)
        point[position] = past
        with pytest.raises(ConfigError, match=f"--{name} must be"):
            asymptotic_errors(*point)
