"""Checkpoints in safetensors (never pickle): model, Adam state, RNG position and step.

Every batch is drawn from a generator seeded by (seed, "train", step), so the RNG state of a
run is its seed and the next step, stored in the metadata; resuming redraws exactly the
batches an uninterrupted run would have drawn.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from iclab.io import atomic_write

FORMAT = "iclab-checkpoint-1"


class OptimizerState(Protocol):
    """What a checkpoint needs of an optimiser (torch's, or iclab's exact L-BFGS)."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state_dict: dict[str, Any]) -> None: ...


def save_checkpoint(
    path: Path, model: torch.nn.Module, optimizer: OptimizerState, step: int, seed: int
) -> None:
    """Atomically write the state after ``step`` completed steps."""
    tensors: dict[str, torch.Tensor] = {
        f"model.{name}": value.detach().cpu().contiguous()
        for name, value in model.state_dict().items()
    }
    state = optimizer.state_dict()
    for index, slots in state["state"].items():
        for slot, value in slots.items():
            tensors[f"optim.{index}.{slot}"] = torch.as_tensor(value).detach().cpu().contiguous()
    metadata = {
        "format": FORMAT,
        "step": str(step),
        "rng": json.dumps({"seed": seed, "stream": "train", "next_step": step}),
        "param_groups": json.dumps(state["param_groups"]),
    }
    atomic_write(path, lambda tmp: save_file(tensors, str(tmp), metadata=metadata))


def load_checkpoint(
    path: Path, model: torch.nn.Module, optimizer: OptimizerState
) -> int:
    """Restore model and optimizer from ``path``; return the number of completed steps."""
    with safe_open(str(path), framework="pt") as handle:
        metadata = handle.metadata()
    if metadata.get("format") != FORMAT:
        raise ValueError(f"{path}: not an iclab checkpoint (format {metadata.get('format')!r})")
    tensors = load_file(str(path))
    device = next(model.parameters()).device
    model.load_state_dict(
        {name[len("model."):]: t.to(device) for name, t in tensors.items()
         if name.startswith("model.")}
    )
    slots: dict[int, dict[str, torch.Tensor]] = {}
    for name, value in tensors.items():
        if name.startswith("optim."):
            _, index, slot = name.split(".", 2)
            target = value if slot == "step" else value.to(device)
            slots.setdefault(int(index), {})[slot] = target
    optimizer.load_state_dict(
        {"state": slots, "param_groups": json.loads(metadata["param_groups"])}
    )
    return int(metadata["step"])
