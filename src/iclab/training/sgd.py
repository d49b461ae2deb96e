"""Plain stochastic gradient descent, optionally with heavy-ball momentum, without
``torch.optim`` (whose construction imports torch._dynamo; see ``iclab.training.adam``).

Without momentum one step is theta <- theta - lr g, so a run with learning rates lr_s follows
gradient flow of the expected loss at time t = sum_s lr_s (docs/theory.md section 18). With
momentum mu: b <- mu b + g, theta <- theta - lr b (torch.optim.SGD's convention, dampening 0),
an effective time lr / (1 - mu) per step once b settles.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch


class SGD:
    """SGD over one group of parameters; ``param_groups[0]["lr"]`` may change between steps."""

    def __init__(self, params: Iterable[torch.nn.Parameter], lr: float,
                 momentum: float = 0.0) -> None:
        self.params = list(params)
        if not self.params:
            raise ValueError("SGD got an empty parameter list")
        self.param_groups: list[dict[str, Any]] = [{"lr": lr, "momentum": momentum}]
        self.state: list[dict[str, torch.Tensor]] = [{} for _ in self.params]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for param in self.params:
            if set_to_none:
                param.grad = None
            elif param.grad is not None:
                param.grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient."""
        lr, momentum = self.param_groups[0]["lr"], self.param_groups[0]["momentum"]
        for param, state in zip(self.params, self.state, strict=True):
            if param.grad is None:
                continue
            direction = param.grad
            if momentum:
                buffer = state.get("momentum_buffer")
                if buffer is None:
                    buffer = state["momentum_buffer"] = direction.clone()
                else:
                    buffer.mul_(momentum).add_(direction)
                direction = buffer
            param.add_(direction, alpha=-lr)

    def state_dict(self) -> dict[str, Any]:
        """{"state": {index: {"momentum_buffer"}}, "param_groups": [...]}."""
        group = {**self.param_groups[0], "params": list(range(len(self.params)))}
        state = {index: dict(slots) for index, slots in enumerate(self.state) if slots}
        return {"state": state, "param_groups": [group]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        (group,) = state_dict["param_groups"]
        if len(group["params"]) != len(self.params):
            raise ValueError(f"optimizer state holds {len(group['params'])} parameters, "
                             f"expected {len(self.params)}")
        self.param_groups = [{key: value for key, value in group.items() if key != "params"}]
        self.state = [{} for _ in self.params]
        for position, index in enumerate(group["params"]):
            slots = state_dict["state"].get(index, state_dict["state"].get(str(index), {}))
            param = self.params[position]
            self.state[position] = {name: value.to(device=param.device, dtype=param.dtype,
                                                   copy=True) for name, value in slots.items()}
