"""Reference regression algorithms run on each prompt, behind ``InContextAlgorithm``.

Zero, minimum-norm least squares (OLS), ridge(lambda), the Bayes posterior mean for linear
Gaussian tasks (ridge with penalty sigma^2 Sigma_w^{-1}, docs/theory.md section 7), and k
steps of gradient descent on L(w) = 1/2 sum_i (y_i - w^T x_i)^2 from w_0 = 0: plain with given
or optimal step sizes, preconditioned by given matrices, and GD++ (which also transforms the
inputs at every step).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from iclab.algorithms.base import InContextAlgorithm
from iclab.tasks.base import TaskFamily
from iclab.tasks.covariance import validate_covariance
from iclab.theory.depth.multistep import multistep_optimum
from iclab.utils.errors import ConfigError


def _finite_at_least_zero(name: str, value: float) -> float:
    if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
        raise ConfigError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


class ZeroPredictor(InContextAlgorithm):
    """Predicts 0 whatever the prompt."""

    name = "zero"

    def fit(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return X.new_zeros(X.shape[0], X.shape[2])


class LeastSquares(InContextAlgorithm):
    """Minimum-norm least squares: w_hat = pinv(X) y."""

    name = "ols"

    def fit(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        w: torch.Tensor = (torch.linalg.pinv(X) @ y[..., None]).squeeze(-1)
        return w


class Ridge(InContextAlgorithm):
    """w_hat = (X^T X + P)^{-1} X^T y with penalty P = lam I, or a given (d, d) matrix P."""

    name = "ridge"

    def __init__(self, lam: float = 1.0, penalty: np.ndarray | None = None) -> None:
        self.lam = _finite_at_least_zero("ridge lambda", lam) if penalty is None else float(lam)
        self.penalty = penalty

    def fit(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        d = X.shape[2]
        if self.penalty is None:
            P = self.lam * torch.eye(d, dtype=X.dtype, device=X.device)
        else:
            P = torch.as_tensor(self.penalty, dtype=X.dtype, device=X.device)
        gram = X.transpose(1, 2) @ X + P                          # (B, d, d)
        Xty = torch.einsum("bnd,bn->bd", X, y)                    # (B, d)
        w: torch.Tensor = torch.linalg.solve(gram, Xty)
        return w


class BayesPosteriorMean(Ridge):
    """The posterior mean of w for linear Gaussian tasks: ridge with P = sigma^2 Sigma_w^{-1}.

    With sigma = 0 it is the minimum-norm interpolant in the Sigma_w^{-1} metric, computed as
    the limit sigma -> 0 (OLS when n >= d).
    """

    name = "bayes"

    def __init__(
        self, sigma: float, sigma_w: np.ndarray | None = None, d: int | None = None
    ) -> None:
        self.sigma = _finite_at_least_zero("sigma", sigma)
        if sigma_w is None:
            if d is None:
                raise ConfigError("give sigma_w or d")
            cov_w = np.eye(d)
        else:
            dim = np.shape(sigma_w)[0] if d is None else d
            cov_w = validate_covariance(np.asarray(sigma_w), dim, "sigma_w")
        self.sigma_w = cov_w
        super().__init__(penalty=sigma**2 * np.linalg.inv(cov_w))

    def fit(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.sigma > 0:
            return super().fit(X, y)
        # sigma = 0: w_hat = Sigma_w X^T (X Sigma_w X^T)^+ y.
        cov = torch.as_tensor(self.sigma_w, dtype=X.dtype, device=X.device)
        XS = X @ cov                                              # (B, n, d)
        kernel = XS @ X.transpose(1, 2)                           # (B, n, n)
        alpha = (torch.linalg.pinv(kernel) @ y[..., None]).squeeze(-1)
        return torch.einsum("bnd,bn->bd", XS, alpha)


def _steps(name: str, values: Sequence[float]) -> tuple[float, ...]:
    out = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value):
            raise ConfigError(f"{name} must be a finite number, got {value!r}")
        out.append(float(value))
    if not out:
        raise ConfigError(f"steps must be >= 1, got {len(out)}")
    return tuple(out)


class KStepGD(InContextAlgorithm):
    """k steps from w_0 = 0: w_(t+1) = w_t + eta_t X^T (y - X w_t).

    ``KStepGD(eta, k)``: k steps of one size; ``KStepGD([eta_1, ..., eta_k])``: given sizes
    (``steps``, if given, must equal their number); ``KStepGD.optimal(task, k)``: the sizes
    minimising the population loss (``iclab.theory.depth.multistep``). w_k = q(S) X^T y with
    1 - t q(t) = prod_t (1 - eta_t t), so the order of the sizes does not matter.
    """

    name = "k-step-gd"

    def __init__(self, eta: float | Sequence[float], steps: int | None = None) -> None:
        if isinstance(eta, Sequence):
            etas = _steps("eta", eta)
            if steps is not None and steps != len(etas):
                raise ConfigError(f"steps = {steps} but {len(etas)} step sizes were given")
        else:
            if steps is None or steps < 1:
                raise ConfigError(f"steps must be >= 1, got {steps}")
            etas = _steps("eta", [eta]) * int(steps)
        self.etas = etas
        self.steps = len(etas)
        self.eta = etas[0] if len(set(etas)) == 1 else None

    @classmethod
    def optimal(cls, task: TaskFamily, steps: int, **options: Any) -> KStepGD:
        """The best ``steps`` sizes for ``task``; options go to ``multistep_optimum``."""
        return cls(list(multistep_optimum(task, steps, **options).etas))

    def fit(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        w = X.new_zeros(X.shape[0], X.shape[2])
        for eta in self.etas:
            residual = y - torch.einsum("bnd,bd->bn", X, w)       # (B, n)
            w = w + eta * torch.einsum("bnd,bn->bd", X, residual)
        return w


class PreconditionedKStepGD(InContextAlgorithm):
    """k preconditioned steps from w_0 = 0: w_(t+1) = w_t + A_t X^T (y - X w_t).

    preconditioners: k (d, d) matrices A_1..A_k, in the order applied (they need not commute).
    """

    name = "preconditioned-k-step-gd"

    def __init__(self, preconditioners: Sequence[np.ndarray | torch.Tensor]) -> None:
        if len(preconditioners) < 1:
            raise ConfigError("give at least one preconditioner")
        matrices = [torch.as_tensor(np.asarray(a), dtype=torch.float64)
                    for a in preconditioners]
        d = matrices[0].shape[0]
        for k, a in enumerate(matrices):
            if a.shape != (d, d) or not bool(torch.isfinite(a).all()):
                raise ConfigError(f"preconditioner {k} must be a finite ({d}, {d}) matrix, "
                                  f"got shape {tuple(a.shape)}")
        self.preconditioners = tuple(matrices)

    def fit(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if X.shape[2] != self.preconditioners[0].shape[0]:
            raise ConfigError(f"the preconditioners are {self.preconditioners[0].shape[0]}-"
                              f"dimensional but the prompts have d = {X.shape[2]}")
        w = X.new_zeros(X.shape[0], X.shape[2])
        for a in self.preconditioners:
            A = a.to(dtype=X.dtype, device=X.device)
            gradient = torch.einsum("bnd,bn->bd", X, y - torch.einsum("bnd,bd->bn", X, w))
            w = w + gradient @ A.T
        return w


class GDPlusPlus(InContextAlgorithm):
    """GD++ (von Oswald et al. 2023, arXiv 2212.07677), k layers from w_0 = 0.

    The tokens e_i = [x_i; r_i] (r_i = y_i at the start) and the query [x_q; s] (s = 0) are
    all updated by each layer t from that layer's input, with S_t = sum_i x_i x_i^T over the
    context tokens:

        r_i <- r_i - eta_t sum_j r_j x_j^T x_i,   s <- s - eta_t sum_j r_j x_j^T x_q,
        x   <- (I - gamma_t S_t) x   for every token, the query included,

    and the prediction is -s. The first line is one GD step on the residuals; the second is
    the paper's curvature correction, which shrinks the large directions of S (gamma = 0 gives
    plain k-step GD). A plain sum over the examples (no 1/n), as everywhere in iclab. The
    prediction is linear in x_q, so ``fit`` returns the equivalent w: with x = T_t x_original
    after t layers, w = sum_t eta_t T_t^T (X T_t^T)^T r_t.
    """

    name = "gd++"

    def __init__(self, etas: Sequence[float], gammas: Sequence[float]) -> None:
        self.etas = _steps("eta", etas)
        self.gammas = _steps("gamma", gammas)
        if len(self.etas) != len(self.gammas):
            raise ConfigError(f"GD++ needs one gamma per eta: {len(self.etas)} etas, "
                              f"{len(self.gammas)} gammas")

    def fit(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        batch, _, d = X.shape
        eye = torch.eye(d, dtype=X.dtype, device=X.device)
        T = eye.expand(batch, d, d)                                # (B, d, d)
        w = X.new_zeros(batch, d)
        residual = y
        for eta, gamma in zip(self.etas, self.gammas, strict=True):
            inputs = X @ T.transpose(1, 2)                         # (B, n, d): the x's now
            gradient = torch.einsum("bnd,bn->bd", inputs, residual)
            w = w + eta * torch.einsum("bij,bi->bj", T, gradient)  # += eta T^T g
            residual = residual - eta * torch.einsum("bnd,bd->bn", inputs, gradient)
            T = (eye - gamma * inputs.transpose(1, 2) @ inputs) @ T
        return w
