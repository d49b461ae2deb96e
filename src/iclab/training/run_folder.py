"""The run folder's contract: its files, how each is read and written, and what binds them.

    config.json              the exact configuration (flat keys, see iclab.config.train)
    metrics.jsonl            the training log (one JSON object a line)
    checkpoint.safetensors   the resumable state (iclab.training.checkpoint)
    model.safetensors        the trained weights; metadata "iclab": {"config", "checksum"}
    result.json              the numbers and the verdict, written atomically and last
    checkpoints/             with --checkpoints K: the weights through training, one
                             step-STEP.safetensors each (iclab.training.snapshots)
    pool.npy                 a run with a task pool (--tasks, --task-pool): its (K, d) tasks
    prefix.json, .csv, .png  the prefix curves of a model with prefix predictions
                             (iclab.studies.transformer.prefix_curves), written before result.json

Every writer in iclab (the trainer, ``iclab.runs``, the sweep's executors) names these files
through this module only. Files are written atomically (``iclab.utils.io``): a reader sees the old
file or the whole new one.

The binding: result.json's ``binding`` holds the hash of the config it was computed for
(``TrainConfig.hash``), the checksum of the weights it judged (``tensor_digest``) and a checksum
of its own other keys (all but the timings); model.safetensors' metadata holds the config it
was trained on and the checksum of its tensors. A finished folder whose config.json,
model.safetensors or result.json was edited after the run disagrees with them, and is refused
with one line. Folders written
before the binding existed (iclab 0.1 and later versions without it) have none and are read
as before.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load_file

from iclab.training.checkpoint import tensor_digest, write_tensors
from iclab.utils.errors import ConfigError
from iclab.utils.io import atomic_write, atomic_write_json, read_json

CONFIG, METRICS, RESULT = "config.json", "metrics.jsonl", "result.json"
CHECKPOINT, MODEL = "checkpoint.safetensors", "model.safetensors"
CHECKPOINTS = "checkpoints"
"""The folder of the checkpoints kept through training (``iclab.training.snapshots``)."""
POOL = "pool.npy"
"""A pooled run's tasks, (K, d) float64 (written before training; the config holds them or
the seed they are drawn from)."""
RUN_FILES = (CONFIG, METRICS, CHECKPOINT, MODEL, RESULT)
PREFIX_JSON, PREFIX_CSV, PREFIX_PNG = "prefix.json", "prefix.csv", "prefix.png"
PREFIX_FILES = (PREFIX_JSON, PREFIX_CSV, PREFIX_PNG)
"""The prefix curves (``iclab.studies.transformer.prefix_curves``) of a run whose model
predicts at every prefix."""
RESUME_FILES = (CONFIG, METRICS, CHECKPOINT)
"""What an unfinished run resumes from: its config, its metrics so far, its last checkpoint."""
MODEL_METADATA = "iclab"
"""model.safetensors' metadata key: JSON {"config": the run's config, "checksum": of the
weights (``tensor_digest``)}."""
BINDING = "binding"
"""result.json's key holding {"config_hash", "model_checksum", "result_checksum"}."""
RESULT_KEYS = ("test_loss", "test_loss_stderr")
"""Finite numbers every result.json holds (certify needs only these)."""
SHOWN_KEYS = (*RESULT_KEYS, "loss_star")
"""Finite numbers ``iclab train`` shows of a finished run (and, with eta_hat, ETA_KEYS)."""
ETA_KEYS = ("eta_hat", "eta_star", "eta_rel_err", "isotropy_err", "gamma_rel_err")
RESTART_HINT = "rerun with --restart to train it again"


UNCHECKED = (BINDING, "wall_seconds", "cpu_seconds", "threads")
"""result.json's keys its checksum leaves out: the binding itself and the timings and the
threads the process used (which differ between two runs of one config, so that the checksum,
like the numbers, does not)."""


def result_checksum(result: dict[str, Any]) -> str:
    """A checksum of ``result``'s keys but UNCHECKED (canonical JSON), 32 hex digits."""
    body = {key: value for key, value in result.items() if key not in UNCHECKED}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def bind_result(result: dict[str, Any], config_hash: str, model_checksum: str) -> dict[str, Any]:
    """``result`` with its ``binding`` to the run's config and weights (see module doc)."""
    body = {key: value for key, value in result.items() if key != BINDING}
    return {**body, BINDING: {"config_hash": config_hash, "model_checksum": model_checksum,
                              "result_checksum": result_checksum(body)}}


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


def _edited(path: Path, what: str) -> ConfigError:
    return ConfigError(f"{path}: {what} since the run finished, so its result no longer "
                       f"describes it; {RESTART_HINT}, or restore the file")


@dataclass(frozen=True)
class RunFolder:
    """One run's folder ``path`` and its files (see the module doc)."""

    path: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    @property
    def config(self) -> Path:
        return self.path / CONFIG

    @property
    def metrics(self) -> Path:
        return self.path / METRICS

    @property
    def checkpoint(self) -> Path:
        return self.path / CHECKPOINT

    @property
    def model(self) -> Path:
        return self.path / MODEL

    @property
    def result(self) -> Path:
        return self.path / RESULT

    @property
    def prefix_files(self) -> tuple[Path, Path, Path]:
        """prefix.json, prefix.csv, prefix.png."""
        return (self.path / PREFIX_JSON, self.path / PREFIX_CSV, self.path / PREFIX_PNG)

    @property
    def finished(self) -> bool:
        """Whether the folder holds result.json (written last, so the run is complete)."""
        return self.result.exists()

    def read_object(self, name: str) -> dict[str, Any]:
        """The JSON object in file ``name``; ConfigError with one line if it is unreadable."""
        path = self.path / name
        try:
            data = read_json(path)
        except (OSError, ValueError, RecursionError) as error:  # Recursion: nested too deep
            raise ConfigError(f"{path}: cannot read the run's {name} ({type(error).__name__}); "
                              f"iclab train --restart replaces the run, or use another --out") \
                from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: the run's {name} is not a JSON object")
        return data

    def write_config(self, config_json: dict[str, Any]) -> None:
        atomic_write_json(self.config, config_json)

    def write_pool(self, pool: np.ndarray) -> None:
        """pool.npy: the run's (K, d) task pool, float64, written atomically."""

        def write(tmp: Path) -> None:
            with tmp.open("wb") as file:
                np.save(file, np.asarray(pool, dtype=np.float64), allow_pickle=False)

        atomic_write(self.path / POOL, write)

    def read_result(self, keys: tuple[str, ...] = SHOWN_KEYS,
                    config_hash: str | None = None) -> dict[str, Any]:
        """The checked result.json: ``keys`` finite, and, where it is bound, its own checksum
        and (given ``config_hash``) its config's hash as recorded; ConfigError otherwise."""
        result = check_result(self.read_object(RESULT), self.result, keys)
        binding = result.get(BINDING)
        if binding is None:
            return result  # written before the binding existed
        if not isinstance(binding, dict) or binding.get("result_checksum") != \
                _safe_checksum(result):
            raise _edited(self.result, "result.json was edited")
        if config_hash is not None and binding.get("config_hash") != config_hash:
            raise ConfigError(f"{self.result} was computed for another config than the run's "
                              f"(config.json was edited since the run finished, or the result "
                              f"was copied from another run); {RESTART_HINT}, or restore the "
                              f"file")
        return result

    def write_result(self, result: dict[str, Any], config_hash: str,
                     model_checksum: str) -> dict[str, Any]:
        """Write result.json bound to the config and weights, atomically and streamed (its
        matrices are d x d); ValueError, and no file, if a number is not finite. Returns the
        bound result."""
        bound = bind_result(result, config_hash, model_checksum)

        def write(tmp: Path) -> None:
            with open(tmp, "w") as handle:
                json.dump(bound, handle, indent=2, allow_nan=False)
                handle.write("\n")

        atomic_write(self.result, write)
        return bound

    def write_model(self, state: dict[str, torch.Tensor], config_json: dict[str, Any]) -> str:
        """Write model.safetensors with its config and checksum; return the checksum."""
        checksum = tensor_digest(state)
        # one metadata key: safetensors writes several in a random order, and the file must be
        # the same bytes whenever the run is (resumed or not)
        metadata = {MODEL_METADATA: json.dumps({"config": config_json, "checksum": checksum})}
        write_tensors(self.model, state, metadata)
        return checksum

    def read_model(self) -> tuple[dict[str, torch.Tensor], dict[str, Any] | None]:
        """The weights and their metadata ({"config", "checksum"}; None in files of iclab
        0.1), the data checked against its checksum; ConfigError with one line otherwise."""
        path = self.model
        if not path.is_file():
            raise ConfigError(f"{self.path} is not a finished iclab run (no {MODEL})")
        try:
            with safe_open(str(path), framework="pt") as handle:
                metadata = handle.metadata() or {}
            state = load_file(str(path))
            recorded = json.loads(metadata[MODEL_METADATA]) if MODEL_METADATA in metadata \
                else None
            if recorded is not None and recorded.get("checksum") != tensor_digest(state):
                raise ValueError("its data does not match its checksum")
        except Exception as error:  # safetensors and torch raise several types
            first = (str(error).strip().splitlines() or [type(error).__name__])[0][:160]
            raise ConfigError(f"{path}: cannot load the model ({first})") from None
        return state, recorded

    def check_model_binding(self, recorded: dict[str, Any] | None,
                            result: dict[str, Any]) -> None:
        """Refuse weights other than those ``result`` judged (where both are recorded)."""
        binding = result.get(BINDING)
        if recorded is None or not isinstance(binding, dict):
            return
        if binding.get("model_checksum") != recorded.get("checksum"):
            raise _edited(self.model, f"{MODEL} was replaced")

    def remove_run_files(self) -> None:
        """Remove everything but config.json (for --restart)."""
        for name in (METRICS, CHECKPOINT, MODEL, RESULT, *PREFIX_FILES):
            path = self.path / name
            if path.is_dir() and not path.is_symlink():
                raise ConfigError(f"{path} is a folder, not iclab's file; remove it by hand")
            path.unlink(missing_ok=True)
        kept = self.path / CHECKPOINTS
        if kept.is_dir() and not kept.is_symlink():
            for path in kept.glob("step-*.safetensors"):
                path.unlink()


def _safe_checksum(result: dict[str, Any]) -> str | None:
    try:
        return result_checksum(result)
    except (TypeError, ValueError):  # a non-finite or non-JSON value: cannot match
        return None
