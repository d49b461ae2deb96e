"""Gradient descent on the prompt's least-squares loss L(w) = 1/2 sum_i (y_i - w^T x_i)^2."""

from __future__ import annotations

import numpy as np
import torch

from iclab.algorithms.base import InContextAlgorithm


def _as_matrix(value: np.ndarray | torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(value, dtype=like.dtype, device=like.device)


class OneStepGD(InContextAlgorithm):
    """One step of size eta from w_0 = 0: w_1 = eta X^T y."""

    name = "one-step-gd"

    def __init__(self, eta: float) -> None:
        self.eta = float(eta)

    def fit(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.eta * torch.einsum("bnd,bn->bd", X, y)


class PreconditionedGD(InContextAlgorithm):
    """One preconditioned step from w_0 = 0 with effective matrix Gamma: w_1 = Gamma X^T y.

    The prediction is x_q^T Gamma X^T y (docs/theory.md section 2); Gamma = eta P for a step of
    size eta preconditioned by P.
    """

    name = "preconditioned-gd"

    def __init__(self, gamma: np.ndarray | torch.Tensor) -> None:
        self.gamma = gamma

    def fit(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        gamma = _as_matrix(self.gamma, X)
        return torch.einsum("ij,bnj,bn->bi", gamma, X, y)
