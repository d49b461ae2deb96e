"""Step sizes of L-step gradient descent, and a multi-start Newton search for the best ones.

L steps from w_0 = 0, w_(l+1) = w_l + eta_l X^T (y - X w_l), give w_L = q(S) X^T y with
S = X^T X and

    q_(l+1)(t) = q_l(t) + eta_l p_l(t),    p_(l+1)(t) = p_l(t) (1 - eta_l t),

q_0 = 0, p_0 = 1: p_L(t) = 1 - t q_L(t) = prod_l (1 - eta_l t), the error polynomial, which
fixes the steps only up to order. ``step_polynomials`` evaluates (p_L, q_L) at scalars (the
eigenvalues or quadrature nodes), ``step_matrices`` gives q_L(S) for whole matrices.

The loss as a function of the steps is not convex (it is symmetric under permutations and
a polynomial of degree 2L), so ``minimise_steps`` runs a safeguarded Newton method (exact
Hessian by automatic differentiation; negative curvature flipped, as in saddle-free Newton;
Armijo backtracking) from several starting points and keeps the best end point. It works in
units where the steps are O(1): u = eta * scale, with ``scale`` a typical eigenvalue of S.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

Objective = Callable[[torch.Tensor], torch.Tensor]
"""steps (L,) float64 -> the loss, a scalar tensor differentiable in the steps."""

MAX_NEWTON_ITERATIONS = 200


def step_polynomials(etas: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """etas: (L,), t: any shape -> (p_L(t), q_L(t)), each of t's shape."""
    p = torch.ones_like(t)
    q = torch.zeros_like(t)
    for eta in etas:
        q = q + eta * p
        p = p - eta * t * p
    return p, q


def step_matrices(etas: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """etas: (L,), S: (N, d, d) -> q_L(S): (N, d, d), by the recursion M <- M + eta (I - S M)."""
    eye = torch.eye(S.shape[-1], dtype=S.dtype)
    M = torch.zeros_like(S)
    for eta in etas:
        M = M + eta * (eye - S @ M)
    return M


def derivatives(f: Objective, x: torch.Tensor) -> tuple[float, torch.Tensor, torch.Tensor]:
    """f(x), its gradient (L,) and Hessian (L, L), by automatic differentiation."""
    x = x.detach().clone().requires_grad_(True)
    value = f(x)
    (grad,) = torch.autograd.grad(value, x, create_graph=True)
    rows = [torch.autograd.grad(grad[i], x, retain_graph=True)[0] for i in range(x.numel())]
    return float(value.detach()), grad.detach(), torch.stack(rows).detach()


def newton_minimise(f: Objective, x0: torch.Tensor) -> tuple[torch.Tensor, float]:
    """A local minimum of f near x0: (x, f(x)). x0: (L,) float64."""
    x = x0.detach().clone()
    value, grad, hess = derivatives(f, x)
    for _ in range(MAX_NEWTON_ITERATIONS):
        eigenvalues, vectors = torch.linalg.eigh(hess)
        floor = max(1e-12 * float(eigenvalues.abs().max()), 1e-300)
        step = -vectors @ ((vectors.T @ grad) / eigenvalues.abs().clamp_min(floor))
        slope = float(grad @ step)
        if slope >= 0:                      # no descent direction left: numerically stationary
            break
        t = 1.0
        while t > 1e-12:
            candidate = x + t * step
            trial = float(f(candidate))
            if math.isfinite(trial) and trial <= value + 1e-4 * t * slope:
                break
            t /= 2
        else:
            break
        moved = float((t * step).norm())
        x = candidate
        improvement = value - trial
        value, grad, hess = derivatives(f, x)
        if moved <= 1e-14 * (1.0 + float(x.norm())) or improvement <= 1e-16 * abs(value):
            break
    return x, value


def lbfgs_minimise(f: Objective, x0: torch.Tensor, iterations: int, history: int = 20,
                   tolerance: float = 1e-8) -> torch.Tensor:
    """A local minimum of f near x0 (any shape) by L-BFGS with Armijo backtracking; stops
    after ``iterations`` or once 5 iterations together lower f by at most tolerance * |f|.

    (torch.optim is avoided: importing it costs seconds.)
    """
    def value_and_grad(x: torch.Tensor) -> tuple[float, torch.Tensor]:
        x = x.detach().clone().requires_grad_(True)
        value = f(x)
        (grad,) = torch.autograd.grad(value, x)
        return float(value.detach()), grad.flatten()

    x = x0.detach().clone()
    value, grad = value_and_grad(x)
    pairs: list[tuple[torch.Tensor, torch.Tensor]] = []
    values = [value]
    for _ in range(iterations):
        r = grad.clone()
        coefficients = []
        for s_k, y_k in reversed(pairs):
            a = float(s_k @ r) / float(y_k @ s_k)
            r -= a * y_k
            coefficients.append(a)
        if pairs:
            s_k, y_k = pairs[-1]
            r *= float(s_k @ y_k) / float(y_k @ y_k)
        else:
            r *= 1e-3 / max(float(grad.norm()), 1e-300)
        for (s_k, y_k), a in zip(pairs, reversed(coefficients), strict=True):
            r += s_k * (a - float(y_k @ r) / float(y_k @ s_k))
        direction = -r
        slope = float(grad @ direction)
        if slope >= 0:
            direction, slope, pairs = -grad, -float(grad @ grad), []
        t = 1.0
        while t > 1e-12:
            candidate = x + t * direction.view_as(x)
            trial, trial_grad = value_and_grad(candidate)
            if math.isfinite(trial) and trial <= value + 1e-4 * t * slope:
                break
            t /= 2
        else:
            break
        step, change = (candidate - x).flatten(), trial_grad - grad
        if float(step @ change) > 1e-300:
            pairs = [*pairs, (step, change)][-history:]
        x, value, grad = candidate, trial, trial_grad
        values.append(value)
        if (len(values) > 5 and values[-6] - value <= tolerance * abs(value)) \
                or float(grad.norm()) == 0.0:
            break
    return x


def chebyshev_steps(layers: int, low: float, high: float) -> list[float]:
    """1 / (the roots of the degree-L Chebyshev polynomial on [low, high]): a classic start."""
    middle, half = (high + low) / 2, (high - low) / 2
    return [1.0 / (middle + half * math.cos((2 * k - 1) * math.pi / (2 * layers)))
            for k in range(1, layers + 1)]


def starting_points(
    layers: int, low: float, high: float, generator: torch.Generator, random_starts: int,
    extra: Sequence[Sequence[float]] = (),
) -> list[list[float]]:
    """Steps to start from: ``extra``, the Chebyshev steps on [low, high], and random ones
    (1/eta uniform on [low, high]) drawn from ``generator``."""
    starts = [list(map(float, start)) for start in extra if len(start) == layers]
    starts.append(chebyshev_steps(layers, low, high))
    for _ in range(random_starts):
        u = torch.rand(layers, generator=generator, dtype=torch.float64)
        starts.append([1.0 / (low + (high - low) * float(v)) for v in u])
    return starts


def minimise_steps(
    f: Objective, starts: Sequence[Sequence[float]], scale: float,
    screen: Objective | None = None, polish: int = 2,
) -> tuple[list[float], float]:
    """The best local minimum of f over Newton runs from ``starts``: (sorted steps, f there).

    scale: a typical eigenvalue of S; the search runs in u = eta * scale. With ``screen`` (a
    cheaper approximation of f, e.g. on fewer prompts) every start is first run on it, and
    only the ``polish`` best end points are then run on f.
    """
    def scaled(objective: Objective) -> Objective:
        return lambda u: objective(u / scale)

    points = [torch.tensor([eta * scale for eta in start], dtype=torch.float64)
              for start in starts]
    if screen is not None:
        screened = [newton_minimise(scaled(screen), u0) for u0 in points]
        screened = sorted((r for r in screened if math.isfinite(r[1])), key=lambda r: r[1])
        points = [u for u, _ in screened[:polish]]
    best: tuple[list[float], float] | None = None
    for u0 in points:
        u, value = newton_minimise(scaled(f), u0)
        if math.isfinite(value) and (best is None or value < best[1]):
            best = (sorted(float(v) / scale for v in u), value)
    if best is None:
        raise ValueError("no starting point gave a finite loss")
    return best
