"""The model probe's parameter-dependence check, both ways: a model whose gradient is zero at
its start but whose predictions move with its weights (a saddle, as the all-zero start of an
LSA) passes; one whose predictions never change with its weights is refused."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import torch
from torch import nn

from iclab.models.base import Model
from iclab.models.probe import probe_model
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator


@dataclass(frozen=True)
class NoOptions:
    pass


class ZeroStartProduct(Model):
    """yhat = (x_q A) . (B X^T y) with A = B = 0: every gradient is 0 at the start."""

    name = "zero-start-product"
    options_class = NoOptions

    def __init__(self, d: int, scale: float) -> None:
        super().__init__()
        self.A = nn.Parameter(torch.zeros(d, d, dtype=torch.float64))
        self.B = nn.Parameter(torch.zeros(d, d, dtype=torch.float64))
        self.scale = scale

    @classmethod
    def create(cls, d: int, options: Any, generator: torch.Generator | None = None,
               dtype: torch.dtype = torch.float32) -> ZeroStartProduct:
        return cls(d, 1.0)

    def forward(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        Xty = torch.einsum("bnd,bn->bd", X, y)
        return self.scale * ((x_q @ self.A) * (Xty @ self.B.T)).sum(-1)


class IgnoresWeights(ZeroStartProduct):
    """The same graph, but the weights are multiplied by 0 before they reach the output."""

    name = "ignores-weights"

    @classmethod
    def create(cls, d: int, options: Any, generator: torch.Generator | None = None,
               dtype: torch.dtype = torch.float32) -> IgnoresWeights:
        return cls(d, 0.0)

    def forward(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        return super().forward(X, y, x_q) + x_q.sum(-1)


def _probe(model_class: type[Model]) -> None:
    task = LinearGaussian(3, 5, 0.5)
    prompts = task.sample_prompts(2, make_generator(0, "probe"), torch.float64)
    probe_model(model_class, model_class.name, 3, 5, NoOptions(), task, prompts,
                make_generator(0, "probe-init"))


def test_a_zero_gradient_start_that_depends_on_the_weights_passes() -> None:
    _probe(ZeroStartProduct)
    model = ZeroStartProduct.create(3, NoOptions())
    assert all(p.abs().max() == 0 for p in model.parameters())   # restored by the probe


def test_predictions_that_ignore_the_weights_are_refused() -> None:
    with pytest.raises(ConfigError, match="do not change when its parameters do"):
        _probe(IgnoresWeights)
