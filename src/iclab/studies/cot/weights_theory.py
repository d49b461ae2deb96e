"""The exact weight-prediction error of k steps of gradient descent (docs/theory.md section 21).

Isotropic linear Gaussian prompts: x_i ~ N(0, I_d), w ~ N(0, I_d), y_i = w^T x_i + sigma eps_i,
S = X^T X / n, b = X^T y / n. GD on the in-context least squares loss from w_0 = 0,

    w_{i+1} = w_i - eta_{i+1} (S w_i - b),

gives w_k - w = -p(S) w + r(S) X^T eps sigma / n with p(s) = prod_i (1 - eta_i s) = 1 - s r(s).
Averaging over w, then over eps given X,

    E ||w_k - w||^2 = E tr p(S)^2 + (sigma^2 / n) E tr (r(S)^2 S),

a finite combination of the exact moments M_m = E tr S^m = E tr W^m / n^m, W ~ Wishart(n, I_d)
(``iclab.theory.depth.wishart_moments``). With one step size eta for every step,
p(s) = (1 - eta s)^k and r(s) = eta sum_{j<k} (1 - eta s)^j, so the error is a polynomial in
eta with exact rational coefficients, minimised in float64 over its stationary points. With a
step of its own per step, r is any polynomial of degree k - 1 and the error a quadratic form
in r's coefficients: the optimum solves H r = g exactly (in rationals), H_ab = M_{a+b+2} +
(sigma^2 / n) M_{a+b+1}, g_a = M_{a+1}, and its steps are the reciprocals of p's roots.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import comb

import numpy as np

from iclab.theory.depth.polynomial_exact import solve_exact
from iclab.theory.depth.wishart_moments import wishart_trace_moments
from iclab.utils.errors import ConfigError

MAX_STEPS = 16
"""The most steps k: the error needs moments up to degree 2k (the moments go to 40)."""


def trace_moments(n: int, d: int, top: int) -> list[Fraction]:
    """[E tr S^m for m = 0..top] exactly, S = X^T X / n (the m = 0 entry is d)."""
    return [Fraction(value, n**m) for m, value in enumerate(wishart_trace_moments(top, n, d))]


def check_steps(k: int, name: str = "--steps-k") -> int:
    """k itself, or ConfigError unless 1 <= k <= MAX_STEPS."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_STEPS:
        raise ConfigError(f"{name} takes step counts from 1 to {MAX_STEPS}, got {k!r}")
    return k


def constant_step_polynomial(k: int, n: int, d: int, sigma: float) -> list[Fraction]:
    """The coefficients c_m (m = 0..2k) of E ||w_k - w||^2 = sum_m c_m eta^m for k steps of
    one step size eta, exactly."""
    check_steps(k, "steps")
    M = trace_moments(n, d, 2 * k)
    noise = Fraction(sigma) ** 2 / n
    coefficients = [Fraction(comb(2 * k, m) * (-1) ** m) * M[m] for m in range(2 * k + 1)]
    # r(s) = eta sum_{j<k} (1 - eta s)^j = sum_i q_i eta^(i+1) s^i, q_i = (-1)^i C(k, i+1)
    q = [Fraction((-1) ** i * comb(k, i + 1)) for i in range(k)]
    for a in range(k):
        for b in range(k):
            coefficients[a + b + 2] += noise * q[a] * q[b] * M[a + b + 1]
    return coefficients


def constant_step_error(k: int, n: int, d: int, sigma: float, eta: float) -> float:
    """E ||w_k - w||^2 of k GD steps of size eta (exact coefficients, evaluated in float64)."""
    coefficients = constant_step_polynomial(k, n, d, sigma)
    return float(sum(c * Fraction(eta) ** m for m, c in enumerate(coefficients)))


@dataclass(frozen=True)
class StepsOptimum:
    """The optimal k-step GD for weight prediction: one constant step size and the best steps
    of their own (the optimal polynomial)."""

    k: int
    eta: float
    """The optimal constant step size."""
    error: float
    """E ||w_k - w||^2 at ``eta``."""
    etas: tuple[float, ...] | None
    """The optimal steps of their own (sorted), None where p has a non-real root."""
    error_per_step: float
    """E ||w_k - w||^2 of the optimal polynomial p (= of ``etas`` where they are real)."""

    def to_json(self) -> dict[str, object]:
        return {"k": self.k, "eta": self.eta, "error": self.error,
                "etas_per_step": None if self.etas is None else list(self.etas),
                "error_per_step": self.error_per_step}


def optimal_constant_step(k: int, n: int, d: int, sigma: float) -> tuple[float, float]:
    """(eta*, E ||w_k - w||^2 at eta*): the best of the real positive stationary points of the
    error polynomial (the error grows without bound in eta, so its minimum is one of them)."""
    exact = constant_step_polynomial(k, n, d, sigma)
    derivative = [float(m * c) for m, c in enumerate(exact)][1:]
    roots = np.roots(derivative[::-1])
    candidates = [float(root.real) for root in roots
                  if abs(root.imag) <= 1e-9 * max(1.0, abs(root)) and root.real > 0]
    if not candidates:
        raise ConfigError(f"no positive stationary step size for k = {k}, n = {n}, d = {d}")
    polished = [_newton(exact, eta) for eta in candidates]
    errors = [float(sum(c * Fraction(eta) ** m for m, c in enumerate(exact)))
              for eta in polished]
    best = int(np.argmin(errors))
    return polished[best], errors[best]


def _newton(coefficients: list[Fraction], eta: float, iterations: int = 6) -> float:
    """``eta`` polished by Newton's method on the derivative, in float64."""
    first = np.polynomial.Polynomial([float(c) for c in coefficients]).deriv()
    second = first.deriv()
    for _ in range(iterations):
        curvature = float(second(eta))
        if curvature <= 0:
            break
        eta -= float(first(eta)) / curvature
    return eta


def optimal_polynomial(k: int, n: int, d: int, sigma: float) -> tuple[list[Fraction], Fraction]:
    """(r's coefficients, the error): the best w_k = r(S) b with deg r <= k - 1, exactly."""
    check_steps(k, "steps")
    M = trace_moments(n, d, 2 * k)
    noise = Fraction(sigma) ** 2 / n
    H = [[M[a + b + 2] + noise * M[a + b + 1] for b in range(k)] for a in range(k)]
    g = [M[a + 1] for a in range(k)]
    r = solve_exact(H, g)
    return r, M[0] - sum(gi * ri for gi, ri in zip(g, r, strict=True))


def steps_optimum(k: int, n: int, d: int, sigma: float) -> StepsOptimum:
    """The optimal constant step and the optimal steps of their own, for k steps."""
    eta, error = optimal_constant_step(k, n, d, sigma)
    r, best = optimal_polynomial(k, n, d, sigma)
    p = [1.0] + [-float(c) for c in r]           # p(s) = 1 - s r(s), ascending powers
    roots = np.polynomial.Polynomial(p).roots()
    real = bool(np.all(np.abs(roots.imag) <= 1e-9 * np.maximum(1.0, np.abs(roots))))
    etas = tuple(sorted(1.0 / float(root.real) for root in roots)) if real else None
    return StepsOptimum(k=k, eta=eta, error=error, etas=etas, error_per_step=float(best))
