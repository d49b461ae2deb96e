"""What iclab's optimisers share: one group of parameters, per-parameter state, and
``state_dict`` / ``load_state_dict`` in ``torch.optim``'s layout, without ``torch.optim``
(whose construction imports torch._dynamo; see ``iclab.training.adam``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch


class OneGroupOptimiser:
    """The parameters (one group, ``param_groups[0]``, whose ``lr`` may change between steps)
    and their state; subclasses write ``step``."""

    name = "optimiser"

    def __init__(self, params: Iterable[torch.nn.Parameter], group: dict[str, Any]) -> None:
        self.params = list(params)
        if not self.params:
            raise ValueError(f"{self.name} got an empty parameter list")
        self.param_groups: list[dict[str, Any]] = [group]
        self.state: list[dict[str, torch.Tensor]] = [{} for _ in self.params]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for param in self.params:
            if set_to_none:
                param.grad = None
            elif param.grad is not None:
                param.grad.zero_()

    def state_dict(self) -> dict[str, Any]:
        """{"state": {index: {slot: tensor}}, "param_groups": [group with "params"]}, as
        ``torch.optim`` lays it out."""
        group = {**self.param_groups[0], "params": list(range(len(self.params)))}
        state = {index: dict(slots) for index, slots in enumerate(self.state) if slots}
        return {"state": state, "param_groups": [group]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore from ``state_dict`` (this class's or its ``torch.optim`` twin's, one group),
        copying every tensor onto its parameter's device."""
        (group,) = state_dict["param_groups"]
        if len(group["params"]) != len(self.params):
            raise ValueError(
                f"optimizer state holds {len(group['params'])} parameters, expected "
                f"{len(self.params)}"
            )
        self.param_groups = [self.restored_group(group)]
        self.state = [{} for _ in self.params]
        for position, index in enumerate(group["params"]):
            slots = state_dict["state"].get(index, state_dict["state"].get(str(index), {}))
            param = self.params[position]
            self.state[position] = {   # copies: never share tensors with the source
                slot: value.to(device=param.device, copy=True,
                               dtype=self.slot_dtype(slot, param))
                for slot, value in slots.items()
            }

    def restored_group(self, group: dict[str, Any]) -> dict[str, Any]:
        """The group's settings as this optimiser keeps them (without "params")."""
        return {key: value for key, value in group.items() if key != "params"}

    def slot_dtype(self, slot: str, param: torch.Tensor) -> torch.dtype:
        """The dtype a restored state ``slot`` of ``param`` takes: the parameter's."""
        return param.dtype
