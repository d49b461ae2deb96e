"""The generic in-context baselines of the prefix curves (Garg et al. 2022), beside the family's
own (``family_baselines``): averaging, k nearest neighbours, ridge at the prior
and one-step GD with Theorem 1's step at each prompt length; ``generic_baselines`` names the
ones that apply to a family.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from iclab.algorithms.base import InContextAlgorithm, InContextPredictor
from iclab.algorithms.baselines import BayesPosteriorMean, LeastSquares, Ridge
from iclab.tasks.base import TaskFamily
from iclab.theory.gaussian import eta_star_isotropic


class Averaging(InContextAlgorithm):
    """w_hat = (1/n) sum_i y_i x_i (0 for an empty prompt)."""

    name = "averaging"

    def fit(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        total = torch.einsum("bnd,bn->bd", X, y)
        return total / max(X.shape[1], 1)


class NearestNeighbours(InContextPredictor):
    """The mean label of the ``neighbours`` examples nearest to x_q (Euclidean); all of them
    when the prompt has fewer; 0 for an empty prompt."""

    name = "3-nn"

    def __init__(self, neighbours: int = 3) -> None:
        if isinstance(neighbours, bool) or not isinstance(neighbours, int) or neighbours < 1:
            raise ValueError(f"neighbours must be an integer >= 1, got {neighbours!r}")
        self.neighbours = neighbours
        self.name = f"{neighbours}-nn"

    def predict(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        if X.shape[1] == 0:
            return X.new_zeros(X.shape[0])
        distances = (X - x_q[:, None]).square().sum(-1)                    # (B, n)
        nearest = distances.topk(min(self.neighbours, X.shape[1]), largest=False).indices
        return y.gather(1, nearest).mean(-1)


class RidgeAtPrior(InContextAlgorithm):
    """Ridge with the penalty of a unit prior, lambda = sigma^2 (w ~ N(0, I)); at sigma = 0
    its limit lambda -> 0, minimum-norm least squares."""

    name = "ridge"

    def __init__(self, sigma: float) -> None:
        self.sigma = float(sigma)
        self._fit = Ridge(self.sigma**2) if self.sigma > 0 else LeastSquares()

    def fit(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self._fit.fit(X, y)


class TheoremOneGD(InContextAlgorithm):
    """One GD step w = eta* X^T y with the optimal step of Theorem 1 at the prompt's own
    length n, eta* = 1 / (n + d + 1 + sigma^2) (isotropic Gaussian prompts)."""

    name = "one-step-gd"

    def __init__(self, sigma: float) -> None:
        self.sigma = float(sigma)

    def fit(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        batch, n, d = X.shape
        if n == 0:
            return X.new_zeros(batch, d)
        return eta_star_isotropic(n, d, self.sigma) * torch.einsum("bnd,bn->bd", X, y)


def standard_isotropic(task: TaskFamily) -> bool:
    """Whether ``task`` is linear Gaussian with Sigma_x = Sigma_w = I (the closed forms of
    ``iclab.theory.prefix`` and Theorem 1's step apply)."""
    if not task.gaussian:
        return False
    gaussian: Any = task  # a Gaussian family has sigma_x and sigma_w (TaskFamily's contract)
    eye = np.eye(task.d)
    return bool(np.array_equal(np.asarray(gaussian.sigma_x), eye)
                and np.array_equal(np.asarray(gaussian.sigma_w), eye))


def generic_baselines(task: TaskFamily) -> list[InContextPredictor]:
    """Least squares (minimum norm), ridge at the prior, averaging, 3 nearest neighbours; the
    Bayes posterior mean for a linear Gaussian family; one-step GD with Theorem 1's step for
    an isotropic one."""
    out: list[InContextPredictor] = [LeastSquares(), RidgeAtPrior(task.sigma), Averaging(),
                                     NearestNeighbours(3)]
    if task.gaussian:
        gaussian: Any = task
        out.append(BayesPosteriorMean(task.sigma, np.asarray(gaussian.sigma_w)))
    if standard_isotropic(task):
        out.append(TheoremOneGD(task.sigma))
    return out
