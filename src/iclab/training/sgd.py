"""Plain stochastic gradient descent, optionally with heavy-ball momentum, without
``torch.optim`` (whose construction imports torch._dynamo; see ``iclab.training.adam``).

Without momentum one step is theta <- theta - lr g, so a run with learning rates lr_s follows
gradient flow of the expected loss at time t = sum_s lr_s (docs/theory.md section 18). With
momentum mu: b <- mu b + g, theta <- theta - lr b (torch.optim.SGD's convention, dampening 0),
an effective time lr / (1 - mu) per step once b settles. With ``weight_decay`` lambda > 0
the decay is decoupled (as AdamW's): theta <- theta (1 - lr lambda) before the step, which
without momentum is exactly SGD on the loss plus the L2 penalty lambda |theta|^2 / 2.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from iclab.training.one_group import OneGroupOptimiser


class SGD(OneGroupOptimiser):
    """SGD over one group of parameters; ``param_groups[0]["lr"]`` may change between steps."""

    name = "SGD"

    def __init__(self, params: Iterable[torch.nn.Parameter], lr: float,
                 momentum: float = 0.0, weight_decay: float = 0.0) -> None:
        super().__init__(params, {"lr": lr, "momentum": momentum,
                                  **({"weight_decay": weight_decay} if weight_decay else {})})

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient."""
        lr, momentum = self.param_groups[0]["lr"], self.param_groups[0]["momentum"]
        decay = float(self.param_groups[0].get("weight_decay", 0.0))
        for param, state in zip(self.params, self.state, strict=True):
            if param.grad is None:
                continue
            if decay:
                param.mul_(1.0 - lr * decay)
            direction = param.grad
            if momentum:
                buffer = state.get("momentum_buffer")
                if buffer is None:
                    buffer = state["momentum_buffer"] = direction.clone()
                else:
                    buffer.mul_(momentum).add_(direction)
                direction = buffer
            param.add_(direction, alpha=-lr)
