"""A run folder's life: creating it safely, reusing it, and reading a finished one back.

The folder's files, their formats and the binding of config, model and result are the
contract of ``iclab.training.run_folder``; this module checks an ``--out`` folder, prepares it
(config.json) and reads a finished run back for ``iclab certify``, ``iclab shift`` and resume.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from iclab.config.sections import DEFAULT_MODEL, MODEL_KEY
from iclab.config.train import TrainConfig
from iclab.models.base import Model
from iclab.models.registry import ModelRegistry
from iclab.tasks.registry import FamilyRegistry
from iclab.training.run_folder import (
    CONFIG,
    RESULT,
    RESULT_KEYS,
    RUN_FILES,
    SHOWN_KEYS,
    RunFolder,
    check_result,
)
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

__all__ = ["CONFIG", "RESULT", "RUN_FILES", "SHOWN_KEYS", "check_out_dir", "check_result",
           "load_trained_model", "prepare_run_dir", "read_finished_run", "read_result"]


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


def prepare_run_dir(config: TrainConfig, out_dir: Path, restart: bool = False,
                    families: FamilyRegistry | None = None) -> bool:
    """Create ``out_dir`` with config.json, or check it holds this config. True if finished.

    ``restart`` removes the run's own files first (a damaged checkpoint, say), and lets this
    config replace a different one in an iclab run folder (a corrected rerun).
    """
    folder = RunFolder(out_dir)
    try:
        if folder.config.exists():
            return _reuse_run_dir(config, folder, restart, families)
        if out_dir.exists() and any(out_dir.iterdir()):
            raise ConfigError(f"{out_dir} exists, is not empty and holds no iclab {CONFIG}")
        out_dir.mkdir(parents=True, exist_ok=True)
        folder.write_config(config.to_json())
    except OSError as error:
        raise ConfigError(f"{out_dir}: cannot write the run folder "
                          f"({error.strerror or type(error).__name__})") from None
    return False


def _reuse_run_dir(config: TrainConfig, folder: RunFolder, restart: bool,
                   families: FamilyRegistry | None) -> bool:
    try:
        existing = folder.read_object(CONFIG)
        model = existing.get(MODEL_KEY, DEFAULT_MODEL) if isinstance(existing, dict) else None
        same = TrainConfig.from_json(
            existing, model_type=config.model_type if model == config.model_name else None,
            families=families).to_json() == config.to_json()
    except ConfigError:
        if not restart:
            raise
        same = False
    if not same and not restart:
        raise ConfigError(f"{folder.path} holds a run with a different config; use another "
                          f"--out, or --restart to replace that run")
    if restart:
        folder.remove_run_files()
        if not same:
            folder.write_config(config.to_json())
        return False
    if folder.finished:  # its result and the weights it judged, both unedited
        _checked_weights(folder, config, None, read_result(folder.path, config=config))
        return True
    return False


def read_result(run_dir: Path, keys: tuple[str, ...] = SHOWN_KEYS,
                config: TrainConfig | None = None) -> dict[str, Any]:
    """The checked result.json of a finished run (ConfigError naming a damaged one, or one
    bound to another config than ``config``)."""
    return RunFolder(run_dir).read_result(keys, None if config is None else config.hash())


def read_finished_run(run_dir: Path, models: ModelRegistry | None = None,
                      families: FamilyRegistry | None = None
                      ) -> tuple[TrainConfig, dict[str, Any]]:
    """The config and result of a finished run, bound to each other where the run recorded
    the binding; ConfigError with one line otherwise. ``models``, ``families``: the
    command's registries (default: the built-ins)."""
    folder = RunFolder(run_dir)
    if not folder.config.is_file() or not folder.result.is_file():
        raise ConfigError(f"{folder.path} is not a finished iclab run (needs {CONFIG} and "
                          f"{RESULT})")
    config = TrainConfig.from_json(folder.read_object(CONFIG), models,
                                   families=families).validate(families)
    return config, folder.read_result(RESULT_KEYS, config.hash())


def load_trained_model(run_dir: Path, config: TrainConfig,
                       models: ModelRegistry | None = None,
                       result: dict[str, Any] | None = None) -> Model:
    """The run's trained weights as a float64 model on the CPU: trained on ``config`` (where
    the file records its config) and, given the run's ``result``, the weights it judged."""
    folder = RunFolder(run_dir)
    state = _checked_weights(folder, config, models, result)
    model = config.model_class().create(config.task.d, config.model,
                                              make_generator(0, "load", fixed=True),
                                              torch.float64)
    try:
        model.load_state_dict({name: t.to(torch.float64) for name, t in state.items()})
    except Exception as error:  # torch raises several types
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:160]
        raise ConfigError(f"{folder.model}: cannot load the model ({first})") from None
    if not all(torch.isfinite(p).all() for p in model.parameters()):
        raise ConfigError(f"{folder.model}: the model has non-finite weights")
    return model


RESTART_HINT_RUN = "rerun the run with --restart, or restore the file"


def _checked_weights(folder: RunFolder, config: TrainConfig, models: ModelRegistry | None,
                     result: dict[str, Any] | None) -> dict[str, torch.Tensor]:
    """The run's weights, refused with one line when damaged, trained on another config than
    ``config`` (where the file records it) or, given ``result``, not the weights it judged."""
    state, recorded = folder.read_model()
    if recorded is not None and _recorded_hash(recorded, models) != config.hash():
        raise ConfigError(f"{folder.model} was trained on another config than {folder.config} "
                          f"(edited since the run?); {RESTART_HINT_RUN}")
    if result is not None:
        folder.check_model_binding(recorded, result)
    return state


def _recorded_hash(recorded: dict[str, Any], models: ModelRegistry | None) -> str | None:
    try:
        return TrainConfig.from_json(recorded.get("config"), models).hash()
    except ConfigError:
        return None
