"""The run folder: its files, creating it safely, and reading a finished one back.

    config.json              the exact configuration (flat keys, see iclab.config.train)
    metrics.jsonl            the training log (written by the trainer)
    checkpoint.safetensors   the resumable state (written by the trainer)
    model.safetensors        the trained weights (written by the trainer)
    result.json              the verdict, written atomically and last
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from iclab.config.train import TrainConfig
from iclab.errors import ConfigError
from iclab.io import atomic_write_json, read_json
from iclab.models.base import Model
from iclab.models.registry import ModelRegistry
from iclab.seeding import make_generator

CONFIG, RESULT = "config.json", "result.json"
METRICS, CHECKPOINT, MODEL = "metrics.jsonl", "checkpoint.safetensors", "model.safetensors"
RUN_FILES = (CONFIG, METRICS, CHECKPOINT, MODEL, RESULT)
RESULT_KEYS = ("test_loss", "test_loss_stderr")


def check_out_dir(out: str | Path) -> Path:
    """``out`` as a Path if a run folder can be created or reused there; ConfigError naming
    the problem (empty, below a plain file, a file itself, not writable) otherwise."""
    if str(out).strip() == "":
        raise ConfigError("--out must name a folder, got an empty string")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a folder")
    ancestor = path
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if ancestor.exists() and not ancestor.is_dir():
        raise ConfigError(f"--out {out}: {ancestor} is a file, not a folder")
    if ancestor.exists() and not os.access(ancestor, os.W_OK | os.X_OK):
        raise ConfigError(f"--out {out}: {ancestor} is not writable")
    return path


def _read_json_object(path: Path, what: str) -> dict[str, Any]:
    try:
        data = read_json(path)
    except (OSError, ValueError) as error:
        raise ConfigError(f"{path}: cannot read the run's {what} ({type(error).__name__}); "
                          f"remove the folder or use another --out") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the run's {what} is not a JSON object")
    return data


def prepare_run_dir(config: TrainConfig, out_dir: Path, restart: bool = False) -> bool:
    """Create ``out_dir`` with config.json, or check it holds this config. True if finished.

    ``restart`` removes the run's own files first (a damaged checkpoint, say).
    """
    config_path = out_dir / CONFIG
    if config_path.exists():
        existing = _read_json_object(config_path, "config.json")
        try:
            same = TrainConfig.from_json(existing).to_json() == config.to_json()
        except ConfigError:
            same = False
        if not same:
            raise ConfigError(
                f"{out_dir} holds a run with a different config; use another --out or remove it"
            )
        if restart:
            for name in (METRICS, CHECKPOINT, MODEL, RESULT):
                (out_dir / name).unlink(missing_ok=True)
            return False
        if (out_dir / RESULT).exists():
            _read_json_object(out_dir / RESULT, "result.json")
            return True
        return False
    if out_dir.exists() and any(out_dir.iterdir()):
        raise ConfigError(f"{out_dir} exists, is not empty and holds no iclab config.json")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_json(config_path, config.to_json())
    except OSError as error:
        raise ConfigError(f"{out_dir}: cannot write the run folder ({error.strerror})") from None
    return False


def read_finished_run(run_dir: Path, models: ModelRegistry | None = None
                      ) -> tuple[TrainConfig, dict[str, Any]]:
    """The config and result of a finished run; ConfigError with one line otherwise."""
    run_dir = Path(run_dir)
    if not (run_dir / CONFIG).is_file() or not (run_dir / RESULT).is_file():
        raise ConfigError(f"{run_dir} is not a finished iclab run (needs config.json and "
                          f"result.json)")
    config = TrainConfig.from_json(_read_json_object(run_dir / CONFIG, "config.json"),
                                   models).validate(models=models)
    result = _read_json_object(run_dir / RESULT, "result.json")
    for key in RESULT_KEYS:
        value = result.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{run_dir}/result.json: {key} must be a number, got {value!r}")
    return config, result


def load_trained_model(run_dir: Path, config: TrainConfig,
                       models: ModelRegistry | None = None) -> Model:
    """The run's trained weights as a float64 model on the CPU."""
    path = Path(run_dir) / MODEL
    if not path.is_file():
        raise ConfigError(f"{run_dir} is not a finished iclab run (no model.safetensors)")
    model = config.model_class(models).create(config.task.d, config.model,
                                              make_generator(0, "load"), torch.float64)
    try:
        state = load_file(str(path))
        model.load_state_dict({name: t.to(torch.float64) for name, t in state.items()})
    except Exception as error:  # safetensors and torch raise several types
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:160]
        raise ConfigError(f"{path}: cannot load the model ({first})") from None
    if not all(torch.isfinite(p).all() for p in model.parameters()):
        raise ConfigError(f"{path}: the model has non-finite weights")
    return model


def dump_result(result: dict[str, Any]) -> str:
    """result.json's text (finite numbers only: NaN/inf would not be valid JSON)."""
    return json.dumps(result, indent=2, allow_nan=False) + "\n"
