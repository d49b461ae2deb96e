"""The exact loss of polynomial predictors w = q(S) X^T y when Sigma_x = s I.

For x ~ N(0, s I), w ~ N(0, Sigma_w) and noise sigma, S = X^T X ~ Wishart(n, s I) is
rotation-invariant, so E[p(S) Sigma_w p(S)] has trace E tr(p(S)^2) tr(Sigma_w) / d and, with
the error polynomial p(t) = 1 - t q(t) (the theory docs (docs/theory.md), section 6),

    L(q) = a E tr(p(S)^2) + sigma^2 s E tr(q(S)^2 S) + sigma^2,     a = s tr(Sigma_w) / d,

a finite combination of the moments M_k = E tr(S^k) = s^k E tr(W^k), W ~ Wishart(n, I_d)
(``iclab.theory.depth.wishart_moments``). Only tr(Sigma_w) enters, so the anisotropic control
family (Sigma_x = I, Sigma_w = diag(lambda)) is exact too. Everything is computed in rational
arithmetic (floats are exact rationals): the loss at given steps, and the Krylov bound, the
minimum of the convex quadratic L(q) over polynomials q of degree L - 1 (a lower bound for
every L-step GD, attained exactly when its error polynomial has L positive real roots, the
reciprocals of the steps: ``positive_real_roots`` decides that exactly with Sturm's theorem).

For searching the steps, ``quadrature`` gives an (L+1)-point Gauss rule for the expected
spectral measure mu of S (E tr f(S) = int f dmu), exact for polynomials of degree 2L + 1, so
the loss of any L steps is a short positive sum in float64, free of the cancellations of
the monomial form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise

import numpy as np
import torch

from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.depth.step_search import step_polynomials
from iclab.theory.depth.wishart_moments import wishart_trace_moments

Poly = list[Fraction]
"""Polynomial coefficients, lowest degree first."""


def _multiply(a: Sequence[Fraction], b: Sequence[Fraction]) -> Poly:
    out = [Fraction(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


def _evaluate(p: Sequence[Fraction], t: Fraction) -> Fraction:
    value = Fraction(0)
    for coefficient in reversed(p):
        value = value * t + coefficient
    return value


def solve_exact(H: list[list[Fraction]], g: list[Fraction]) -> list[Fraction]:
    """H c = g exactly (Gauss-Jordan with pivoting on nonzero entries)."""
    size = len(g)
    rows = [[*H[i], g[i]] for i in range(size)]
    for col in range(size):
        pivot = next(r for r in range(col, size) if rows[r][col] != 0)
        rows[col], rows[pivot] = rows[pivot], rows[col]
        for r in range(size):
            if r != col and rows[r][col] != 0:
                factor = rows[r][col] / rows[col][col]
                rows[r] = [x - factor * y for x, y in zip(rows[r], rows[col], strict=True)]
    return [rows[i][size] / rows[i][i] for i in range(size)]


def error_polynomial(etas: Sequence[float]) -> Poly:
    """prod_l (1 - eta_l t) exactly, for float steps."""
    p: Poly = [Fraction(1)]
    for eta in etas:
        p = _multiply(p, [Fraction(1), -Fraction(eta)])
    return p


def positive_real_roots(p: Sequence[Fraction]) -> int:
    """The number of distinct real roots of p in (0, inf), exactly (Sturm's theorem); p(0) != 0."""
    def derivative(a: Sequence[Fraction]) -> Poly:
        return [k * a[k] for k in range(1, len(a))]

    def remainder(a: Sequence[Fraction], b: Sequence[Fraction]) -> Poly:
        a = list(a)
        while len(a) >= len(b) and any(a):
            factor = a[-1] / b[-1]
            shift = len(a) - len(b)
            for k, coefficient in enumerate(b):
                a[shift + k] -= factor * coefficient
            a.pop()
        while a and a[-1] == 0:
            a.pop()
        return a

    chain = [list(p), derivative(p)]
    while chain[-1] and len(chain[-1]) > 1:
        chain.append([-c for c in remainder(chain[-2], chain[-1])])
    chain = [c for c in chain if c]

    def changes(signs: list[int]) -> int:
        nonzero = [s for s in signs if s != 0]
        return sum(1 for a, b in pairwise(nonzero) if a != b)

    at_zero = changes([(c[0] > 0) - (c[0] < 0) for c in chain])
    at_infinity = changes([(c[-1] > 0) - (c[-1] < 0) for c in chain])
    return at_zero - at_infinity


def polished_roots(p: Sequence[Fraction], scale: float) -> list[float]:
    """The roots of p (all real and simple), from the companion matrix of p(scale u), each
    refined by Newton steps in exact arithmetic."""
    scaled = [float(c * Fraction(scale) ** k) for k, c in enumerate(p)]
    guesses = np.roots(scaled[::-1]).real * scale
    dp = [k * p[k] for k in range(1, len(p))]
    roots = []
    for guess in guesses:
        r = Fraction(float(guess))
        for _ in range(6):
            slope = _evaluate(dp, r)
            if slope == 0:
                break
            r = Fraction(float(r - _evaluate(p, r) / slope))
        roots.append(float(r))
    return roots


@dataclass(frozen=True)
class KrylovOptimum:
    """The best q of degree L-1: q (coefficients), p = 1 - t q, and its loss, exactly."""

    q: tuple[Fraction, ...]
    p: tuple[Fraction, ...]
    loss: Fraction


@dataclass(frozen=True)
class IsotropicPolynomialLoss:
    """L(q) for Sigma_x = scale * I. signal = scale tr(Sigma_w) / d, sigma2 = sigma^2."""

    d: int
    n: int
    scale: Fraction
    signal: Fraction
    sigma2: Fraction

    @classmethod
    def from_task(cls, task: LinearGaussian) -> IsotropicPolynomialLoss | None:
        """The exact loss of ``task`` when its Sigma_x is a multiple of I, else None."""
        cov_x = task.sigma_x
        s = float(cov_x[0, 0])
        if not np.array_equal(cov_x, s * np.eye(task.d)):
            return None
        trace_w = sum((Fraction(float(v)) for v in np.diag(task.sigma_w)), Fraction(0))
        scale = Fraction(s)
        return cls(task.d, task.n, scale, scale * trace_w / task.d,
                   Fraction(float(task.sigma)) ** 2)

    def moments(self, k_max: int) -> list[Fraction]:
        """[M_k = E tr(S^k) for k = 0..k_max]."""
        raw = wishart_trace_moments(k_max, self.n, self.d)
        return [Fraction(m) * self.scale**k for k, m in enumerate(raw)]

    def loss_of_error_polynomial(self, p: Sequence[Fraction]) -> Fraction:
        """L for p = 1 - t q given by its coefficients (p[0] must be 1)."""
        if p[0] != 1:
            raise ValueError("an error polynomial has p(0) = 1")
        q = [-c for c in p[1:]]
        M = self.moments(2 * len(p))
        pp = _multiply(p, p)
        signal = sum((c * M[k] for k, c in enumerate(pp)), Fraction(0))
        noise = sum((c * M[k + 1] for k, c in enumerate(_multiply(q, q))), Fraction(0)) \
            if q else Fraction(0)
        return self.signal * signal + self.sigma2 * self.scale * noise + self.sigma2

    def loss_of_steps(self, etas: Sequence[float]) -> float:
        """The exact loss of the steps (rounded once to float)."""
        return float(self.loss_of_error_polynomial(error_polynomial(etas)))

    def krylov(self, layers: int) -> KrylovOptimum:
        """The best polynomial predictor of degree layers - 1, exactly."""
        M = self.moments(2 * layers + 1)
        noise = self.sigma2 * self.scale
        H = [[self.signal * M[j + k + 2] + noise * M[j + k + 1] for k in range(layers)]
             for j in range(layers)]
        g = [self.signal * M[j + 1] for j in range(layers)]
        q = solve_exact(H, g)
        loss = self.signal * M[0] + self.sigma2 - sum((a * b for a, b in zip(g, q, strict=True)),
                                                      Fraction(0))
        return KrylovOptimum(tuple(q), (Fraction(1), *(-c for c in q)), loss)

    def quadrature(self, nodes: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Gauss rule (t_k, w_k) for mu with ``nodes`` points, exact up to degree 2 nodes - 1.

        The recurrence coefficients come from the moments by the Stieltjes procedure in
        rational arithmetic; the nodes and weights from the Jacobi matrix in float64.
        """
        M = self.moments(2 * nodes)

        def inner(a: Sequence[Fraction], b: Sequence[Fraction]) -> Fraction:
            return sum((c * M[k] for k, c in enumerate(_multiply(a, b))), Fraction(0))

        alphas, betas = [], []
        previous: Poly = [Fraction(0)]
        current: Poly = [Fraction(1)]
        norm_previous = Fraction(1)
        for k in range(nodes):
            norm = inner(current, current)
            alpha = inner([Fraction(0), *current], current) / norm
            beta = norm / norm_previous if k > 0 else Fraction(0)
            alphas.append(alpha)
            betas.append(beta)
            shifted = [Fraction(0), *current]
            padded_current = [*current, Fraction(0)]
            padded_previous = previous + [Fraction(0)] * (len(shifted) - len(previous))
            previous, current = current, [s - alpha * c - beta * q for s, c, q in
                                          zip(shifted, padded_current, padded_previous,
                                              strict=True)]
            norm_previous = norm
        jacobi = np.diag([float(a) for a in alphas])
        off = np.sqrt([float(b) for b in betas[1:]])
        jacobi += np.diag(off, 1) + np.diag(off, -1)
        values, vectors = np.linalg.eigh(jacobi)
        weights = float(M[0]) * vectors[0] ** 2
        return torch.tensor(values, dtype=torch.float64), torch.tensor(weights,
                                                                       dtype=torch.float64)

    def step_objective(self, layers: int) -> tuple[torch.Tensor, torch.Tensor, float, float,
                                                   float]:
        """(nodes, weights, signal, noise, sigma2) of the Gauss rule for ``layers`` steps."""
        nodes, weights = self.quadrature(layers + 1)
        return nodes, weights, float(self.signal), float(self.sigma2 * self.scale), \
            float(self.sigma2)


def quadrature_loss(etas: torch.Tensor, nodes: torch.Tensor, weights: torch.Tensor,
                    signal: float, noise: float, sigma2: float) -> torch.Tensor:
    """The loss of the steps from the Gauss rule: sum_k w_k (signal p^2 + noise t q^2) + sigma^2."""
    p, q = step_polynomials(etas, nodes)
    return (weights * (signal * p**2 + noise * nodes * q**2)).sum() + sigma2
