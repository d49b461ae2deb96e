"""What the sequence study's models share: each is built by its constructor from (d, options,
generator, dtype), and its options check themselves (``check(d)``) before any file is
written. ``prompt_tokens`` lays a prompt out as tokens, ``normal_parameters`` draws seeded
N(0, scale^2) parameters, and ``ProjectedSequenceModel`` holds the q/k/v projections and the
read-out h that ``h3`` and ``gla`` both start from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self

import torch
from torch import nn

from iclab.models.base import Model
from iclab.models.hooks import HookPoint

ParameterDraw = Callable[..., nn.Parameter]


def prompt_tokens(X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
    """z_1..z_(n+1) = [x_i; y_i], [x_q; 0]: (B, n+1, d+1), the query's label slot 0."""
    context = torch.cat([X, y[..., None]], dim=-1)
    query = torch.cat([x_q, x_q.new_zeros(x_q.shape[0], 1)], dim=-1)
    return torch.cat([context, query[:, None]], dim=1)


def normal_parameters(scale: float, generator: torch.Generator | None, dtype: torch.dtype
                      ) -> tuple[torch.device, ParameterDraw]:
    """The generator's device (CPU without one) and ``draw(*shape)``: a parameter of ``shape``
    with N(0, scale^2) entries, drawn only from ``generator``."""
    device = generator.device if generator is not None else torch.device("cpu")

    def draw(*shape: int) -> nn.Parameter:
        return nn.Parameter(scale * torch.randn(
            *shape, generator=generator, dtype=dtype, device=device))

    return device, draw


def one_layer_hooks(state: str, readout: str) -> tuple[HookPoint, ...]:
    """The hook points of ``h3`` and ``gla`` (p = ``options.width(d)``); ``state`` says what
    their state at the query is, ``readout`` how ``attn.1`` gives the prediction."""
    return (
        HookPoint("resid.0", "(B, n+1, d+1)", "the tokens z_1..z_n, z_q", per_layer=False),
        HookPoint("state.1", "(B, 1, p)", state, per_layer=False),
        HookPoint("attn.1", "(B, 1, p)", f"the per-channel output at the query, W_q z_q * "
                  f"state.1 ({readout} is the prediction)", per_layer=False),
    )


class SequenceModel(Model):
    """A model of the sequence study (``h3``, ``gla``, ``mamba``); subclasses give ``name``,
    ``options_class``, ``__init__(d, options, generator, dtype)``, ``forward`` and what else
    they declare."""

    @classmethod
    def create(cls, d: int, options: Any, generator: torch.Generator | None = None,
               dtype: torch.dtype = torch.float32) -> Self:
        return cls(d, options, generator, dtype)

    @classmethod
    def check_options(cls, options: Any, d: int) -> None:
        options.check(d)


class ProjectedSequenceModel(SequenceModel):
    """A one-layer model on ``prompt_tokens`` with projections W_q, W_k, W_v: (p, d+1), p =
    ``options.width(d)``, and a read-out h: (p,) (``h3``, ``gla``); tokens are
    max(p, d+1) wide and training defaults to batch 1024, lr 0.01, 2000 steps."""

    @classmethod
    def token_width(cls, options: Any, d: int) -> int:
        return max(int(options.width(d)), d + 1)

    @classmethod
    def training_defaults(cls, options: Any) -> dict[str, Any]:
        return {"batch": 1024, "lr": 0.01, "steps": 2000}

    def _init_projections(self, d: int, options: Any, draw: ParameterDraw,
                          dtype: torch.dtype, device: torch.device) -> None:
        """W_q, W_k, W_v drawn in that order (N(0, init_scale^2) through ``draw``), h = 1/p."""
        p = options.width(d)
        self.W_q, self.W_k, self.W_v = draw(p, d + 1), draw(p, d + 1), draw(p, d + 1)
        self.head = nn.Parameter(torch.full((p,), 1.0 / p, dtype=dtype, device=device))
