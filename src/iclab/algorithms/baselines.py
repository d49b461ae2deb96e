"""Reference regression algorithms run on each prompt, behind ``InContextAlgorithm``.

Zero, minimum-norm least squares (OLS), ridge(lambda), the Bayes posterior mean for linear
Gaussian tasks (ridge with penalty sigma^2 Sigma_w^{-1}, docs/theory.md section 7) and k steps of
gradient descent on L(w) = 1/2 sum_i (y_i - w^T x_i)^2 from w_0 = 0.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from iclab.algorithms.base import InContextAlgorithm
from iclab.errors import ConfigError
from iclab.tasks.covariance import validate_covariance


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


class KStepGD(InContextAlgorithm):
    """k steps of size eta from w_0 = 0: w_{t+1} = w_t + eta X^T (y - X w_t)."""

    name = "k-step-gd"

    def __init__(self, eta: float, steps: int) -> None:
        if steps < 1:
            raise ConfigError(f"steps must be >= 1, got {steps}")
        if not math.isfinite(eta):
            raise ConfigError(f"eta must be a finite number, got {eta!r}")
        self.eta = float(eta)
        self.steps = int(steps)

    def fit(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        w = X.new_zeros(X.shape[0], X.shape[2])
        for _ in range(self.steps):
            residual = y - torch.einsum("bnd,bd->bn", X, w)       # (B, n)
            w = w + self.eta * torch.einsum("bnd,bn->bd", X, residual)
        return w
