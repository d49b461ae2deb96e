"""The checkpoints a run keeps through training (``iclab train --checkpoints K``): the model's
weights after each of the steps ``config.schedule.checkpoint_steps`` names, one safetensors
file each in the run folder's ``checkpoints/``, ``step-000000123.safetensors``.

Each file is bound to its run exactly as model.safetensors is: one metadata key, "iclab",
holds JSON {"config": the run's config, "checksum": of the tensors (``tensor_digest``),
"step"}. A reader (``iclab development``) refuses a file whose data does not match its
checksum (an edited checkpoint), one recorded for another config, or one whose name and step
disagree, with one line. The files are written atomically; a resumed run rewrites those after
its resume point with the same bytes, so a killed and rerun run keeps the files an
uninterrupted one does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file

from iclab.training.checkpoint import tensor_digest, write_tensors
from iclab.training.run_folder import CHECKPOINTS, MODEL_METADATA
from iclab.utils.errors import ConfigError

PATTERN = re.compile(r"step-(\d{9})\.safetensors")


def snapshot_path(run_dir: Path, step: int) -> Path:
    """The file of the checkpoint after ``step`` steps."""
    return Path(run_dir) / CHECKPOINTS / f"step-{step:09d}.safetensors"


def write_snapshot(run_dir: Path, step: int, state: dict[str, torch.Tensor],
                   config_json: dict[str, Any]) -> str:
    """Write the weights ``state`` after ``step`` steps, bound to ``config_json``; return
    their checksum."""
    path = snapshot_path(run_dir, step)
    path.parent.mkdir(exist_ok=True)
    checksum = tensor_digest(state)
    metadata = {MODEL_METADATA: json.dumps({"config": config_json, "checksum": checksum,
                                            "step": step})}
    write_tensors(path, state, metadata)
    return checksum


def snapshot_steps(run_dir: Path) -> list[int]:
    """The steps of the checkpoint files in ``run_dir``'s checkpoints/, ascending."""
    folder = Path(run_dir) / CHECKPOINTS
    if not folder.is_dir():
        return []
    found = (PATTERN.fullmatch(path.name) for path in folder.iterdir())
    return sorted(int(match.group(1)) for match in found if match)


def read_snapshot(run_dir: Path, step: int,
                  config_json: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The checked weights after ``step`` steps (see the module doc); ConfigError naming the
    file otherwise."""
    path = snapshot_path(run_dir, step)
    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
        state = load_file(str(path))
        recorded = json.loads(metadata[MODEL_METADATA])
    except Exception as error:  # safetensors raises several types for damaged files
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:160]
        raise ConfigError(f"{path}: not a readable iclab checkpoint ({first})") from None
    if not isinstance(recorded, dict) or recorded.get("checksum") != tensor_digest(state):
        raise ConfigError(f"{path}: its data does not match its checksum (the checkpoint was "
                          f"edited or damaged); train the run again with --restart")
    if recorded.get("step") != step:
        raise ConfigError(f"{path}: records step {recorded.get('step')!r}, not the {step} of "
                          f"its name; train the run again with --restart")
    if recorded.get("config") != config_json:
        raise ConfigError(f"{path}: belongs to another config than the run's config.json; "
                          f"train the run again with --restart")
    return state
