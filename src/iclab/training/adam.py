"""Adam with torch's fused kernel, without ``torch.optim``.

Any ``torch.optim.Optimizer`` imports ``torch._dynamo`` when it is built (1-2 s on a 2-core
machine, a third of a default ``iclab train``), and wraps every step in hooks and dynamo guards
(about 0.1 ms per step here). This class runs the very kernel ``torch.optim.Adam(fused=True)``
runs, ``torch._fused_adam_``, on the same state, so its updates are bit-identical to it, and its
``state_dict`` has the same layout, so checkpoints load into either.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

BETAS = (0.9, 0.999)
EPS = 1e-8


class Adam:
    """Adam (no weight decay, no amsgrad) over one group of parameters.

    ``param_groups[0]["lr"]`` may be changed between steps (the learning-rate schedule).
    """

    def __init__(self, params: Iterable[torch.nn.Parameter], lr: float) -> None:
        self.params = list(params)
        if not self.params:
            raise ValueError("Adam got an empty parameter list")
        self.param_groups: list[dict[str, Any]] = [{
            "lr": lr, "betas": BETAS, "eps": EPS, "weight_decay": 0, "amsgrad": False,
            "maximize": False, "foreach": None, "capturable": False, "differentiable": False,
            "fused": True, "decoupled_weight_decay": False,
        }]
        self.state: list[dict[str, torch.Tensor]] = [{} for _ in self.params]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for param in self.params:
            if set_to_none:
                param.grad = None
            elif param.grad is not None:
                param.grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        """One Adam update of every parameter that has a gradient."""
        group = self.param_groups[0]
        params: list[torch.Tensor] = []
        grads: list[torch.Tensor] = []
        exp_avgs: list[torch.Tensor] = []
        exp_avg_sqs: list[torch.Tensor] = []
        steps: list[torch.Tensor] = []
        for param, state in zip(self.params, self.state, strict=True):
            if param.grad is None:
                continue
            if not state:
                state["step"] = torch.zeros((), dtype=torch.float32, device=param.device)
                state["exp_avg"] = torch.zeros_like(param, memory_format=torch.preserve_format)
                state["exp_avg_sq"] = torch.zeros_like(param, memory_format=torch.preserve_format)
            params.append(param)
            grads.append(param.grad)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            steps.append(state["step"])
        if not params:
            return
        beta1, beta2 = group["betas"]
        torch._foreach_add_(steps, 1)
        torch._fused_adam_(
            params, grads, exp_avgs, exp_avg_sqs, [], steps, amsgrad=False, lr=group["lr"],
            beta1=beta1, beta2=beta2, weight_decay=0.0, eps=group["eps"], maximize=False,
            grad_scale=None, found_inf=None,
        )

    def state_dict(self) -> dict[str, Any]:
        """{"state": {index: {"step", "exp_avg", "exp_avg_sq"}}, "param_groups": [...]}, as
        ``torch.optim.Adam.state_dict`` lays it out."""
        group = {**self.param_groups[0], "params": list(range(len(self.params)))}
        state = {index: dict(slots) for index, slots in enumerate(self.state) if slots}
        return {"state": state, "param_groups": [group]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore from ``state_dict`` (this class's or ``torch.optim.Adam``'s, one group)."""
        (group,) = state_dict["param_groups"]
        if len(group["params"]) != len(self.params):
            raise ValueError(
                f"optimizer state holds {len(group['params'])} parameters, expected "
                f"{len(self.params)}"
            )
        self.param_groups = [{key: value for key, value in group.items() if key != "params"}]
        self.param_groups[0]["betas"] = tuple(self.param_groups[0]["betas"])
        self.state = [{} for _ in self.params]
        for position, index in enumerate(group["params"]):
            slots = state_dict["state"].get(index, state_dict["state"].get(str(index), {}))
            param = self.params[position]
            self.state[position] = {   # copies: never share tensors with the source
                name: value.to(device=param.device, copy=True,
                               dtype=torch.float32 if name == "step" else param.dtype)
                for name, value in slots.items()
            }
