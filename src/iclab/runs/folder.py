"""The run folder: its files, creating it safely, and reading a finished one back.

    config.json              the exact configuration (flat keys, see iclab.config.train)
    metrics.jsonl            the training log (written by the trainer)
    checkpoint.safetensors   the resumable state (written by the trainer)
    model.safetensors        the trained weights (written by the trainer)
    result.json              the verdict, written atomically and last
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file

from iclab.config.train import TrainConfig
from iclab.errors import ConfigError
from iclab.io import atomic_write, atomic_write_json, read_json
from iclab.models.base import Model
from iclab.models.registry import ModelRegistry
from iclab.seeding import make_generator
from iclab.training.checkpoint import tensor_digest
from iclab.training.loop import MODEL_METADATA

CONFIG, RESULT = "config.json", "result.json"
METRICS, CHECKPOINT, MODEL = "metrics.jsonl", "checkpoint.safetensors", "model.safetensors"
RUN_FILES = (CONFIG, METRICS, CHECKPOINT, MODEL, RESULT)
RESULT_KEYS = ("test_loss", "test_loss_stderr")
"""Finite numbers every result.json holds (certify needs only these)."""
SHOWN_KEYS = (*RESULT_KEYS, "loss_star")
"""Finite numbers ``iclab train`` shows of a finished run (and, with eta_hat, ETA_KEYS)."""
ETA_KEYS = ("eta_hat", "eta_star", "eta_rel_err", "isotropy_err", "gamma_rel_err")
RESTART_HINT = "rerun with --restart to train it again"


def check_out_dir(out: str | Path) -> Path:
    """``out`` as a Path if a run folder can be created or reused there; ConfigError naming
    the problem (empty, below a plain file, a file itself, not writable) otherwise."""
    if str(out).strip() == "":
        raise ConfigError("--out must name a folder, got an empty string")
    try:
        return _check_out_path(Path(out))
    except OSError as error:  # a name too long, a loop of links
        raise ConfigError(f"--out {out}: {error.strerror or type(error).__name__}") from None


def _check_out_path(path: Path) -> Path:
    out = str(path)
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
    except (OSError, ValueError, RecursionError) as error:  # RecursionError: nested too deep
        raise ConfigError(f"{path}: cannot read the run's {what} ({type(error).__name__}); "
                          f"iclab train --restart replaces the run, or use another --out") \
            from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the run's {what} is not a JSON object")
    return data


def check_result(result: dict[str, Any], path: Path,
                 keys: tuple[str, ...] = SHOWN_KEYS) -> dict[str, Any]:
    """``result`` if it has the numbers of a finished run (``keys``, and ETA_KEYS when it has
    eta_hat, all finite, standard errors >= 0); ConfigError naming the file otherwise."""
    keys = keys + (ETA_KEYS if "eta_hat" in result else ())
    for key in keys:
        value = result.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value) or (key.endswith("stderr") and value < 0):
            raise ConfigError(f"{path}: {key} must be a finite number, got {value!r}; the "
                              f"result is damaged: {RESTART_HINT}")
    return result


def _remove_run_files(out_dir: Path) -> None:
    for name in (METRICS, CHECKPOINT, MODEL, RESULT):
        path = out_dir / name
        if path.is_dir() and not path.is_symlink():
            raise ConfigError(f"{path} is a folder, not iclab's file; remove it by hand")
        path.unlink(missing_ok=True)


def prepare_run_dir(config: TrainConfig, out_dir: Path, restart: bool = False) -> bool:
    """Create ``out_dir`` with config.json, or check it holds this config. True if finished.

    ``restart`` removes the run's own files first (a damaged checkpoint, say), and lets this
    config replace a different one in an iclab run folder (a corrected rerun).
    """
    config_path = out_dir / CONFIG
    try:
        if config_path.exists():
            return _reuse_run_dir(config, out_dir, restart)
        if out_dir.exists() and any(out_dir.iterdir()):
            raise ConfigError(f"{out_dir} exists, is not empty and holds no iclab config.json")
        out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_json(config_path, config.to_json())
    except OSError as error:
        raise ConfigError(f"{out_dir}: cannot write the run folder "
                          f"({error.strerror or type(error).__name__})") from None
    return False


def _reuse_run_dir(config: TrainConfig, out_dir: Path, restart: bool) -> bool:
    config_path = out_dir / CONFIG
    try:
        existing = _read_json_object(config_path, "config.json")
        same = TrainConfig.from_json(existing).to_json() == config.to_json()
    except ConfigError:
        if not restart:
            raise
        same = False
    if not same and not restart:
        raise ConfigError(f"{out_dir} holds a run with a different config; use another --out, "
                          f"or --restart to replace that run")
    if restart:
        _remove_run_files(out_dir)
        if not same:
            atomic_write_json(config_path, config.to_json())
        return False
    if (out_dir / RESULT).exists():
        check_result(_read_json_object(out_dir / RESULT, "result.json"), out_dir / RESULT)
        return True
    return False


def read_result(run_dir: Path, keys: tuple[str, ...] = SHOWN_KEYS) -> dict[str, Any]:
    """The checked result.json of a finished run (ConfigError naming a damaged one)."""
    path = Path(run_dir) / RESULT
    return check_result(_read_json_object(path, "result.json"), path, keys)


def read_finished_run(run_dir: Path, models: ModelRegistry | None = None
                      ) -> tuple[TrainConfig, dict[str, Any]]:
    """The config and result of a finished run; ConfigError with one line otherwise."""
    run_dir = Path(run_dir)
    if not (run_dir / CONFIG).is_file() or not (run_dir / RESULT).is_file():
        raise ConfigError(f"{run_dir} is not a finished iclab run (needs config.json and "
                          f"result.json)")
    config = TrainConfig.from_json(_read_json_object(run_dir / CONFIG, "config.json"),
                                   models).validate(models=models)
    return config, read_result(run_dir, RESULT_KEYS)


def load_trained_model(run_dir: Path, config: TrainConfig,
                       models: ModelRegistry | None = None) -> Model:
    """The run's trained weights as a float64 model on the CPU."""
    path = Path(run_dir) / MODEL
    if not path.is_file():
        raise ConfigError(f"{run_dir} is not a finished iclab run (no model.safetensors)")
    model = config.model_class(models).create(config.task.d, config.model,
                                              make_generator(0, "load"), torch.float64)
    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
        state = load_file(str(path))
        checksum = json.loads(metadata[MODEL_METADATA])["checksum"] \
            if MODEL_METADATA in metadata else None  # absent in files of iclab 0.1
        if checksum is not None and checksum != tensor_digest(state):
            raise ValueError("its data does not match its checksum")
        model.load_state_dict({name: t.to(torch.float64) for name, t in state.items()})
    except Exception as error:  # safetensors and torch raise several types
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:160]
        raise ConfigError(f"{path}: cannot load the model ({first})") from None
    if not all(torch.isfinite(p).all() for p in model.parameters()):
        raise ConfigError(f"{path}: the model has non-finite weights")
    return model


def write_result(path: Path, result: dict[str, Any]) -> None:
    """Write result.json atomically, streamed (its matrices are d x d: at large d the text
    would not fit in memory at once); ValueError, and no file, if a number is not finite."""

    def write(tmp: Path) -> None:
        with open(tmp, "w") as handle:
            json.dump(result, handle, indent=2, allow_nan=False)
            handle.write("\n")

    atomic_write(path, write)
