"""A model written outside iclab: yhat = x_q^T Gamma X^T y / n with Gamma a free d x d matrix.

Train it with

    iclab train --model examples/custom_model.py:CustomModel --d 3 --n 10 --steps 300 --out DIR

Nothing here is registered globally: iclab imports this file when the command names it. The
class declares a linear read-out, so iclab reports the Gamma it learned against Gamma*, like
for its own ``lsa`` model; it declares no sufficient-statistic forward, so it trains on whole
prompts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from iclab.models import LinearReadout, Model
from iclab.utils.fields import setting


@dataclass(frozen=True)
class CustomOptions:
    """Options become ``iclab train`` flags (``--gamma-init``) and spec keys."""

    gamma_init: float = setting(0.0, "Initial Gamma is gamma_init * I plus small noise.",
                                minimum=-10.0, maximum=10.0)


class CustomModel(Model):
    """yhat = x_q^T Gamma X^T y / n: one step of preconditioned GD with a learned Gamma."""

    name = "custom-linear"
    description = "x_q^T Gamma X^T y / n with Gamma a free d x d matrix (an example plug-in)"
    options_class = CustomOptions
    has_readout = True

    def __init__(self, d: int, gamma: torch.Tensor) -> None:
        super().__init__()
        self.d = d
        self.gamma = nn.Parameter(gamma)

    @classmethod
    def create(cls, d: int, options: Any, generator: torch.Generator | None = None,
               dtype: torch.dtype = torch.float32) -> CustomModel:
        noise = torch.randn(d, d, generator=generator, dtype=dtype)
        return cls(d, options.gamma_init * torch.eye(d, dtype=dtype) + 0.01 * noise)

    def forward(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n), x_q: (B, d) -> (B,)."""
        Xty = torch.einsum("bnd,bn->bd", X, y)                     # (B, d)
        return ((x_q @ self.gamma) * Xty).sum(-1) / X.shape[1]

    def readout(self, n: int) -> LinearReadout:
        """The effective Gamma of the plain-sum convention is Gamma / n."""
        gamma = self.gamma.detach().to("cpu", torch.float64).numpy() / n
        return LinearReadout.from_gamma(np.array(gamma))
