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

from iclab.training.one_group import OneGroupOptimiser

BETAS = (0.9, 0.999)
EPS = 1e-8


class Adam(OneGroupOptimiser):
    """Adam (no amsgrad) over one group of parameters; with ``weight_decay`` lambda > 0 it
    is AdamW (decoupled decay, Loshchilov and Hutter 2019: theta <- theta (1 - lr lambda)
    before the Adam update; ``torch.optim.AdamW(fused=True)``'s kernel).

    ``param_groups[0]["lr"]`` may be changed between steps (the learning-rate schedule).
    """

    name = "Adam"

    def __init__(self, params: Iterable[torch.nn.Parameter], lr: float,
                 weight_decay: float = 0.0) -> None:
        super().__init__(params, {
            "lr": lr, "betas": BETAS, "eps": EPS, "weight_decay": weight_decay,
            "amsgrad": False, "maximize": False, "foreach": None, "capturable": False,
            "differentiable": False, "fused": True,
            "decoupled_weight_decay": bool(weight_decay),
        })

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
        decay = float(group.get("weight_decay", 0.0))
        kernel = torch._fused_adamw_ if decay else torch._fused_adam_
        kernel(
            params, grads, exp_avgs, exp_avg_sqs, [], steps, amsgrad=False, lr=group["lr"],
            beta1=beta1, beta2=beta2, weight_decay=decay, eps=group["eps"], maximize=False,
            grad_scale=None, found_inf=None,
        )

    def restored_group(self, group: dict[str, Any]) -> dict[str, Any]:
        restored = super().restored_group(group)
        restored["betas"] = tuple(restored["betas"])
        return restored

    def slot_dtype(self, slot: str, param: torch.Tensor) -> torch.dtype:
        return torch.float32 if slot == "step" else param.dtype
