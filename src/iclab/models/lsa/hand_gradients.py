"""Losses whose gradients in the one-layer LSA's weights are worked out by hand.

A loss-and-gradients function maps the weights (W_K, W_Q, W_V, h) and a batch's tensors to
the loss and, when asked (``gradients=True``), its four gradients, with plain tensor
arithmetic. ``as_autograd_node`` makes one a single autograd node whose backward only scales
the stored gradients; ``without_autograd`` calls it directly, as a training step does
(``Model.statistics_loss_and_gradients``), saving autograd's bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

Gradients = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
"""Gradients of a loss in W_K, W_Q, W_V and h, in that order."""

LossAndGradients = Callable[..., tuple[torch.Tensor, Gradients | None]]
"""(W_K, W_Q, W_V, h, *data, gradients=bool) -> (loss: (), the gradients or None)."""


class _HandGradients(torch.autograd.Function):
    """Inputs: the function, the four weights, then its data (tensors and numbers)."""

    @staticmethod
    def forward(ctx: Any, compute: LossAndGradients, W_K: torch.Tensor, W_Q: torch.Tensor,
                W_V: torch.Tensor, h: torch.Tensor, *data: Any) -> torch.Tensor:
        loss, grads = compute(W_K, W_Q, W_V, h, *data,
                              gradients=any(ctx.needs_input_grad[1:5]))
        if grads is not None:
            ctx.save_for_backward(*grads)
        ctx.data_count = len(data)
        return loss

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        scaled = tuple(g * grad for g in ctx.saved_tensors)
        return (None, *scaled, *(None,) * ctx.data_count)


def as_autograd_node(compute: LossAndGradients, weights: tuple[torch.Tensor, ...],
                     *data: Any) -> torch.Tensor:
    """The loss of ``compute`` as one autograd node over ``weights`` (W_K, W_Q, W_V, h)."""
    loss: torch.Tensor = _HandGradients.apply(compute, *weights, *data)  # type: ignore[no-untyped-call]
    return loss


def without_autograd(compute: LossAndGradients, weights: tuple[torch.Tensor, ...],
                     *data: Any) -> tuple[torch.Tensor, Gradients]:
    """The loss of ``compute`` (detached) and its gradients in ``weights``, no autograd."""
    with torch.no_grad():
        loss, grads = compute(*weights, *data, gradients=True)
    if grads is None:
        raise RuntimeError("a loss-and-gradients function returned no gradients when asked")
    return loss, grads
