"""The optimal L-step gradient descent for a task family: steps, loss, Krylov bound.

L steps from w_0 = 0, w_(l+1) = w_l + eta_l X^T (y - X w_l), predict x_q^T q(S) X^T y with
1 - t q(t) = prod_l (1 - eta_l t) (the theory docs (docs/theory.md), section 6).
``multistep_optimum(task, layers)`` returns

- the best steps eta_1..eta_L (sorted: only their set matters) and their loss. Exact
  (``method = "exact"``, stderr 0) when the task is linear Gaussian with Sigma_x = s I (any
  Sigma_w): the loss is a combination of exact Wishart moments (``polynomial_exact``). Else
  Monte Carlo: the steps minimise the mean loss on a fixed fit sample (common random numbers),
  and the loss is measured on a fresh evaluation sample, mean +- standard error.
- the Krylov bound: the best predictor q(S) X^T y over all q of degree L - 1, a lower bound
  for every L-step GD; ``krylov_attained`` says whether its error polynomial has L positive
  real roots, and then the best steps are their reciprocals and the two losses are equal.
  With noise the best polynomial often has complex roots; the steps are then searched
  (multi-start Newton, ``step_search``) and the GD loss lies above the bound.
- for linear Gaussian tasks whose Sigma_x is not a multiple of I: GD preconditioned by
  Sigma_x^{-1} (plain GD on whitened inputs), exact: ``whitened_etas``, ``whitened_loss``.
- when asked (by default for linear Gaussian tasks with a non-scalar Sigma_x or Sigma_w): the
  best preconditioned L-step GD, A_1..A_L (in the order applied), by Monte Carlo
  (``preconditioned_steps``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from iclab.tasks.base import TaskFamily
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.depth.multistep_mc import (
    MatrixSample,
    SpectralSample,
    draw_sample,
    eigenvalue_range,
    krylov_fit,
    krylov_losses,
    krylov_roots,
    mean_and_stderr,
)
from iclab.theory.depth.polynomial_exact import (
    IsotropicPolynomialLoss,
    polished_roots,
    positive_real_roots,
    quadrature_loss,
)
from iclab.theory.depth.preconditioned_steps import fit_preconditioners, preconditioned_matrices
from iclab.theory.depth.step_search import minimise_steps, starting_points, step_polynomials
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

EXACT, MONTE_CARLO = "exact", "monte-carlo"
MAX_LAYERS = 8
DEFAULT_FIT_PROMPTS = 100_000
DEFAULT_EVAL_PROMPTS = 200_000
SCREEN_PROMPTS = 2_000
MIN_PROMPTS = 1_000
RANDOM_STARTS = 6


@dataclass(frozen=True)
class MultiStepOptimum:
    """The optimal L-step GD of a family; see the module docstring.

    etas: the best steps, sorted; loss and loss_stderr (0.0 when exact); method: "exact" or
    "monte-carlo"; krylov_loss (and stderr) and krylov_attained; whitened_etas and
    whitened_loss (None unless linear Gaussian with a non-scalar Sigma_x); preconditioners:
    L (d, d) arrays in the order applied, with preconditioned_loss and its stderr (None when
    not computed); fit_prompts, eval_prompts: Monte Carlo sample sizes (None when unused).
    """

    layers: int
    etas: tuple[float, ...]
    loss: float
    loss_stderr: float
    method: str
    krylov_loss: float
    krylov_loss_stderr: float
    krylov_attained: bool
    whitened_etas: tuple[float, ...] | None = None
    whitened_loss: float | None = None
    preconditioners: tuple[np.ndarray, ...] | None = None
    preconditioned_loss: float | None = None
    preconditioned_loss_stderr: float | None = None
    fit_prompts: int | None = None
    eval_prompts: int | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready, with the keys of ``iclab theory --layers``."""
        matrices = None if self.preconditioners is None else \
            [m.tolist() for m in self.preconditioners]
        return {
            "gd_steps_layers": self.layers, "gd_steps_etas": list(self.etas),
            "gd_steps_loss": self.loss, "gd_steps_loss_stderr": self.loss_stderr,
            "gd_steps_method": self.method, "krylov_loss": self.krylov_loss,
            "krylov_loss_stderr": self.krylov_loss_stderr,
            "krylov_attained": self.krylov_attained,
            "whitened_gd_etas": None if self.whitened_etas is None else list(self.whitened_etas),
            "whitened_gd_loss": self.whitened_loss,
            "preconditioned_gd_matrices": matrices,
            "preconditioned_gd_loss": self.preconditioned_loss,
            "preconditioned_gd_loss_stderr": self.preconditioned_loss_stderr,
            "fit_prompts": self.fit_prompts, "eval_prompts": self.eval_prompts,
        }


def _count(name: str, value: int, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low \
            or (high is not None and value > high):
        allowed = f"an integer in {low}..{high}" if high is not None else f"an integer >= {low}"
        raise ConfigError(f"{name} must be {allowed}, got {value!r}")
    return value


def _root_starts(roots: np.ndarray, layers: int) -> list[list[float]]:
    """Steps 1/|r| from the (possibly complex) roots of the best polynomial."""
    if len(roots) != layers or not np.all(np.isfinite(roots)) or np.any(roots == 0):
        return []
    return [sorted(float(1 / abs(r)) for r in roots)]


def exact_steps(exact: IsotropicPolynomialLoss, layers: int, seed: int
                ) -> tuple[list[float], float, float, bool]:
    """(sorted steps, their loss, the Krylov loss, Krylov attained), all exact."""
    krylov = exact.krylov(layers)
    p = list(krylov.p)
    mean_eigenvalue = float(exact.moments(1)[1]) / exact.d
    if p[-1] != 0 and positive_real_roots(p) == layers:
        if layers == 1:
            etas = [float(krylov.q[0])]
        else:
            etas = sorted(1.0 / r for r in polished_roots(p, mean_eigenvalue))
        loss = exact.loss_of_steps(etas)
        if abs(loss - float(krylov.loss)) <= 1e-9 * abs(float(krylov.loss)):
            return etas, loss, float(krylov.loss), True
    nodes, weights, signal, noise, sigma2 = exact.step_objective(layers)

    def objective(etas: torch.Tensor) -> torch.Tensor:
        return quadrature_loss(etas, nodes, weights, signal, noise, sigma2)

    scaled = [float(c) * mean_eigenvalue**k for k, c in enumerate(p)]
    extra = _root_starts(np.roots(scaled[::-1]) * mean_eigenvalue, layers)
    starts = starting_points(layers, float(nodes[0]), float(nodes[-1]),
                             make_generator(seed, "multistep-starts"), RANDOM_STARTS, extra)
    etas, _ = minimise_steps(objective, starts, mean_eigenvalue)
    return etas, exact.loss_of_steps(etas), float(krylov.loss), False


@dataclass(frozen=True)
class _MonteCarloSteps:
    etas: list[float]
    loss: float
    loss_stderr: float
    krylov_loss: float
    krylov_loss_stderr: float
    krylov_attained: bool


def monte_carlo_steps(fit: SpectralSample, evaluation: SpectralSample, layers: int, seed: int
                      ) -> _MonteCarloSteps:
    """The best steps on ``fit``, their loss and the Krylov bound measured on ``evaluation``."""
    low, high, top = eigenvalue_range(fit)
    coefficients = krylov_fit(fit, layers, top)
    roots = krylov_roots(coefficients, top)
    attained = bool(len(roots) == layers and np.all(np.abs(roots.imag) <= 1e-8 * np.abs(roots))
                    and np.all(roots.real > 0))
    mean_eigenvalue = float(fit.eigenvalues.mean())

    def objective(etas: torch.Tensor) -> torch.Tensor:
        return fit.losses(*step_polynomials(etas, fit.eigenvalues)).mean()

    head = fit.head(SCREEN_PROMPTS)

    def screen(etas: torch.Tensor) -> torch.Tensor:
        return head.losses(*step_polynomials(etas, head.eigenvalues)).mean()

    starts = starting_points(layers, low, high, make_generator(seed, "multistep-starts"),
                             RANDOM_STARTS, _root_starts(roots, layers))
    etas, _ = minimise_steps(objective, starts, mean_eigenvalue, screen=screen)
    with torch.no_grad():
        steps = torch.tensor(etas, dtype=torch.float64)
        loss, stderr = mean_and_stderr(
            evaluation.losses(*step_polynomials(steps, evaluation.eigenvalues)))
        krylov, krylov_stderr = mean_and_stderr(krylov_losses(evaluation, coefficients, top))
    return _MonteCarloSteps(etas, loss, stderr, krylov, krylov_stderr, attained)


def _is_scalar(matrix: np.ndarray) -> bool:
    return bool(np.array_equal(matrix, matrix[0, 0] * np.eye(len(matrix))))


def whitened_loss(task: LinearGaussian) -> IsotropicPolynomialLoss:
    """Plain GD on Sigma_x^{-1/2} x: x' ~ N(0, I), w' ~ N(0, Sigma_x^{1/2} Sigma_w Sigma_x^{1/2}),
    whose loss needs only tr(Sigma_x Sigma_w) (exact from the float entries)."""
    sx, sw = task.sigma_x, task.sigma_w
    trace = sum((Fraction(float(sx[i, j])) * Fraction(float(sw[j, i]))
                 for i in range(task.d) for j in range(task.d)), Fraction(0))
    return IsotropicPolynomialLoss(task.d, task.n, Fraction(1), trace / task.d,
                                   Fraction(float(task.sigma)) ** 2)


def multistep_optimum(
    task: TaskFamily,
    layers: int,
    *,
    seed: int = 0,
    fit_prompts: int = DEFAULT_FIT_PROMPTS,
    eval_prompts: int = DEFAULT_EVAL_PROMPTS,
    monte_carlo: bool = False,
    preconditioned: bool | None = None,
) -> MultiStepOptimum:
    """The optimal ``layers``-step GD of ``task``; see the module docstring.

    monte_carlo: estimate even where the exact loss is known (a check of it);
    preconditioned: also fit the best preconditioned GD (None: for linear Gaussian tasks with
    a non-scalar covariance). Samples: ``fit_prompts`` to choose the steps, ``eval_prompts``
    fresh ones to measure them, drawn from streams seeded by ``seed``.
    """
    _count("layers", layers, 1, MAX_LAYERS)
    _count("fit_prompts", fit_prompts, MIN_PROMPTS)
    _count("eval_prompts", eval_prompts, MIN_PROMPTS)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)        # small tensors: one thread, robust on a busy machine
    try:
        return _optimum(task, layers, seed, fit_prompts, eval_prompts, monte_carlo,
                        preconditioned)
    finally:
        torch.set_num_threads(previous)


def _optimum(task: TaskFamily, layers: int, seed: int, fit_prompts: int, eval_prompts: int,
             monte_carlo: bool, preconditioned: bool | None) -> MultiStepOptimum:
    exact = IsotropicPolynomialLoss.from_task(task) \
        if isinstance(task, LinearGaussian) and not monte_carlo else None
    samples: tuple[MatrixSample, MatrixSample] | None = None
    if exact is not None:
        etas, loss, krylov, attained = exact_steps(exact, layers, seed)
        plain = _MonteCarloSteps(etas, loss, 0.0, krylov, 0.0, attained)
    else:
        samples = (draw_sample(task, fit_prompts, seed, "multistep-fit"),
                   draw_sample(task, eval_prompts, seed, "multistep-eval"))
        plain = monte_carlo_steps(samples[0].spectral(), samples[1].spectral(), layers, seed)
    result = MultiStepOptimum(
        layers=layers, etas=tuple(plain.etas), loss=plain.loss, loss_stderr=plain.loss_stderr,
        method=EXACT if exact is not None else MONTE_CARLO, krylov_loss=plain.krylov_loss,
        krylov_loss_stderr=plain.krylov_loss_stderr, krylov_attained=plain.krylov_attained,
        fit_prompts=None if exact is not None else fit_prompts,
        eval_prompts=None if exact is not None else eval_prompts,
    )
    bases = [(torch.eye(task.d, dtype=torch.float64), plain.etas)]
    if isinstance(task, LinearGaussian) and not _is_scalar(task.sigma_x):
        w_etas, w_loss, _, _ = exact_steps(whitened_loss(task), layers, seed)
        bases.append((torch.as_tensor(np.linalg.inv(task.sigma_x), dtype=torch.float64), w_etas))
        result = replace(result, whitened_etas=tuple(w_etas), whitened_loss=w_loss)
    starts = [torch.stack([eta * base for eta in order])
              for base, etas in bases for order in (etas, etas[::-1])]
    if preconditioned is None:
        preconditioned = isinstance(task, LinearGaussian) and not (
            _is_scalar(task.sigma_x) and _is_scalar(task.sigma_w))
    if not preconditioned:
        return result
    if samples is None:
        samples = (draw_sample(task, fit_prompts, seed, "multistep-fit"),
                   draw_sample(task, eval_prompts, seed, "multistep-eval"))
    fit, evaluation = samples
    scale = float(torch.diagonal(fit.S, dim1=-2, dim2=-1).mean())
    A, _ = fit_preconditioners(fit, starts, scale)
    with torch.no_grad():
        p_loss, p_stderr = mean_and_stderr(
            evaluation.losses(preconditioned_matrices(A, evaluation.S)))
    return replace(result, preconditioners=tuple(a.numpy() for a in A),
                    preconditioned_loss=p_loss, preconditioned_loss_stderr=p_stderr,
                    fit_prompts=fit_prompts, eval_prompts=eval_prompts)
