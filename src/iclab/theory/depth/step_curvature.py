"""How precisely the steps of L-step GD must be learned: the curvature of its exact loss.

For a task where the exact L-step loss L(eta) is known (``polynomial_exact``: Sigma_x = s I)
and where the optimal L-step GD is the optimum of a sparse L-layer LSA (Sigma_w = c I as
well: then no preconditioner beats scalar steps, by rotation invariance), the steps eta* are
a minimum of L, so a step error delta raises the loss by

    L(eta* + delta) - L(eta*) = delta^T H delta / 2 + O(|delta|^3),     H = d^2 L / d eta^2.

Steps within a relative error tau of eta* (|delta_l| <= tau eta*_l for every l) raise the
loss by at most tau^2 max_s s^T H_rel s / 2, with H_rel = diag(eta*) H diag(eta*): a convex
function is largest on a box at a corner, s in {-1, +1}^L (2^L <= 256 corners). So

    tau = sqrt(2 r L(eta*) / max_s s^T H_rel s)

is the largest relative step error that raises the loss by at most a fraction r of it, to
second order. The cubic and quartic terms are not small at that tau (at L = 4, d = 5, n = 20,
sigma = 0.5 the worst corner's exact rise is 12 %, not 5 %), so ``step_tolerance`` then
shrinks tau (bisection) until the exact loss at every corner of the box rises by at most r:
``quadratic_tolerance`` is the curvature's tau, ``tolerance`` the one the exact loss
confirms. H is exact: L(eta) is a polynomial of degree 2L, and the (L+1)-point
Gauss rule of the exact Wishart moments (``IsotropicPolynomialLoss.step_objective``) gives it
exactly in float64, differentiated twice by automatic differentiation.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from iclab.tasks.base import TaskFamily
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.depth.polynomial_exact import IsotropicPolynomialLoss, quadrature_loss
from iclab.theory.depth.step_search import derivatives


def isotropic_steps_loss(task: TaskFamily) -> IsotropicPolynomialLoss | None:
    """The exact L-step loss of ``task`` when the optimal L-step GD with scalar steps is the
    optimum of a sparse L-layer LSA: a linear Gaussian task with Sigma_x = s I and
    Sigma_w = c I; None otherwise."""
    if not isinstance(task, LinearGaussian):
        return None
    cov_w = task.sigma_w
    if not np.array_equal(cov_w, cov_w[0, 0] * np.eye(task.d)):
        return None
    return IsotropicPolynomialLoss.from_task(task)


def step_hessian(exact: IsotropicPolynomialLoss, etas: Sequence[float]) -> np.ndarray:
    """d^2 L / d eta_j d eta_k at ``etas``: (L, L) float64, exact (Gauss rule, autograd)."""
    nodes, weights, signal, noise, sigma2 = exact.step_objective(len(etas))

    def loss(steps: torch.Tensor) -> torch.Tensor:
        return quadrature_loss(steps, nodes, weights, signal, noise, sigma2)

    _, _, hessian = derivatives(loss, torch.tensor(list(etas), dtype=torch.float64))
    matrix: np.ndarray = hessian.numpy()
    symmetric: np.ndarray = 0.5 * (matrix + matrix.T)
    return symmetric


@dataclass(frozen=True)
class StepTolerance:
    """``tolerance``: the largest relative step error tau whose worst case raises the loss by
    at most ``loss_resolution`` of ``loss`` at every corner of its box, by the exact loss;
    ``quadratic_tolerance``: the same to second order (from ``hessian``, (L, L) at the
    optimal ``etas``); ``worst_corner``: the signs s of the second-order worst case."""

    etas: tuple[float, ...]
    loss: float
    loss_resolution: float
    hessian: np.ndarray
    worst_corner: tuple[int, ...]
    quadratic_tolerance: float
    tolerance: float


def step_tolerance(exact: IsotropicPolynomialLoss, etas: Sequence[float], loss: float,
                   loss_resolution: float) -> StepTolerance | None:
    """The tolerance of the optimal steps ``etas`` (loss ``loss``) for a loss rise of at most
    ``loss_resolution`` * loss (module docstring); None when the Hessian is not positive
    definite (``etas`` not a strict minimum) or a number is not finite."""
    hessian = step_hessian(exact, etas)
    relative = hessian * np.outer(etas, etas)
    corners = [np.array((1, *signs)) for signs in itertools.product((-1, 1),
                                                                    repeat=len(etas) - 1)]
    curvatures = [float(s @ relative @ s) for s in corners]
    worst = int(np.argmax(curvatures))
    top = curvatures[worst]
    if not (np.all(np.isfinite(relative)) and loss > 0 and math.isfinite(loss)
            and float(np.linalg.eigvalsh(relative)[0]) > 0):
        return None
    quadratic = math.sqrt(2.0 * loss_resolution * loss / top)
    tolerance = _confirmed(exact, etas, loss, loss_resolution, quadratic)
    return StepTolerance(tuple(float(e) for e in etas), float(loss), float(loss_resolution),
                         hessian, tuple(int(v) for v in corners[worst]), quadratic, tolerance)


def worst_corner_rise(exact: IsotropicPolynomialLoss, etas: Sequence[float], loss: float,
                      tolerance: float) -> float:
    """The largest exact relative loss rise L(eta (1 + tolerance s)) / loss - 1 over the
    corners s in {-1, +1}^L of the box of relative step errors."""
    steps = np.asarray(etas, dtype=np.float64)
    return max(exact.loss_of_steps(list(steps * (1.0 + tolerance * np.asarray(signs))))
               for signs in itertools.product((-1, 1), repeat=len(steps))) / loss - 1.0


BISECTIONS = 30
"""Halvings of the tolerance interval: tau to about 1e-9 of itself."""


def _confirmed(exact: IsotropicPolynomialLoss, etas: Sequence[float], loss: float,
               loss_resolution: float, quadratic: float) -> float:
    """The largest tau <= ``quadratic`` whose corners rise by at most ``loss_resolution``
    (by bisection on the exact loss)."""
    if worst_corner_rise(exact, etas, loss, quadratic) <= loss_resolution:
        return quadratic
    low, high = 0.0, quadratic
    for _ in range(BISECTIONS):
        middle = 0.5 * (low + high)
        if worst_corner_rise(exact, etas, loss, middle) <= loss_resolution:
            low = middle
        else:
            high = middle
    return low
