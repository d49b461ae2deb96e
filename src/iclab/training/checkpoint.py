"""Checkpoints in safetensors (never pickle): model, optimiser state, RNG position and step.

Every batch is drawn from a generator seeded by (seed, "train", step), so the RNG state of a
run is its seed and the next step, stored in the metadata; resuming redraws exactly the
batches an uninterrupted run would have drawn. A checkpoint carries the hash of its run's
config and is refused by a run with another config (another seed, say), and a checksum of its
tensors, so that damaged data is reported as such (not later, as a diverging loss).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Protocol

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save

from iclab.utils.errors import ConfigError
from iclab.utils.io import atomic_write

FORMAT = "iclab-checkpoint-1"
RESTART_HINT = "rerun with --restart to start the run over"


class OptimizerState(Protocol):
    """What a checkpoint needs of an optimiser (iclab's Adam, or its exact L-BFGS)."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state_dict: dict[str, Any]) -> None: ...


def tensor_digest(tensors: dict[str, torch.Tensor]) -> str:
    """A checksum of named tensors (names, dtypes, shapes and bytes), 32 hex digits."""
    digest = hashlib.blake2b(digest_size=16)
    for name in sorted(tensors):
        tensor = tensors[name].detach().cpu().contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def write_tensors(path: Path, tensors: dict[str, torch.Tensor], metadata: dict[str, str]) -> None:
    """Write ``tensors`` as safetensors to ``path`` atomically. The bytes are made in memory
    and written by Python, so a full disk raises OSError (ENOSPC) and leaves no file, where
    safetensors' own writer can report success for a file the disk did not take."""
    data = save(tensors, metadata=metadata)

    def write(tmp: Path) -> None:
        tmp.write_bytes(data)

    atomic_write(path, write)


def save_checkpoint(
    path: Path, model: torch.nn.Module, optimizer: OptimizerState, step: int, seed: int,
    config_hash: str = "",
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
        "config_hash": config_hash,
        "rng": json.dumps({"seed": seed, "stream": "train", "next_step": step}),
        "param_groups": json.dumps(state["param_groups"]),
        "checksum": tensor_digest(tensors),
    }
    write_tensors(path, tensors, metadata)


def _read(path: Path) -> tuple[dict[str, str], dict[str, torch.Tensor]]:
    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
        tensors = load_file(str(path))
    except Exception as error:  # safetensors raises several types for damaged files
        raise ConfigError(f"{path}: not a readable checkpoint ({type(error).__name__}); "
                          f"{RESTART_HINT}") from None
    return metadata, tensors


def load_checkpoint(
    path: Path, model: torch.nn.Module, optimizer: OptimizerState, config_hash: str = "",
) -> int:
    """Restore model and optimizer from ``path``; return the number of completed steps.

    ConfigError (one line naming the file) when the file is damaged, is no iclab checkpoint,
    belongs to another config, or does not fit the model.
    """
    metadata, tensors = _read(path)
    if metadata.get("format") != FORMAT:
        raise ConfigError(f"{path}: not an iclab checkpoint (format {metadata.get('format')!r});"
                          f" {RESTART_HINT}")
    if "checksum" in metadata and metadata["checksum"] != tensor_digest(tensors):
        raise ConfigError(f"{path}: damaged (its data does not match its checksum); "
                          f"{RESTART_HINT}")
    if config_hash and metadata.get("config_hash") != config_hash:
        raise ConfigError(f"{path} belongs to another run (config hash "
                          f"{metadata.get('config_hash')!r}, this run's is {config_hash!r}); "
                          f"{RESTART_HINT}")
    device = next(model.parameters()).device
    try:
        step = int(metadata["step"])
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
    except (KeyError, ValueError, RuntimeError, TypeError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ConfigError(f"{path}: does not fit this run's model ({first[:160]}); "
                          f"{RESTART_HINT}") from None
    if not all(torch.isfinite(t).all() for t in tensors.values()) or step < 0:
        raise ConfigError(f"{path}: holds non-finite weights or optimiser state; {RESTART_HINT}")
    return step
