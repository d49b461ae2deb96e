"""``iclab export``: a finished run's model as files other tools open without iclab.

``torch``: model.py (the module class written for this model, plain PyTorch) and model.pt
(its state dict and constructor arguments, plain tensors and numbers that
``torch.load(..., weights_only=True)`` reads); ``npz``: weights.npz (the arrays and the
flags) and model_numpy.py (a loader needing only NumPy). Both in float64, the precision
iclab evaluates a trained model in. Supported: the one-layer ``lsa`` with one head (written
here), and every model that declares ``has_export`` (the ``transformer``), whose own
``Model.exported`` gives the sources and weights (weights.npz: the state dict's arrays by
name and ``config_json``).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from iclab.models.base import ExportedModel
from iclab.models.lsa.layer import LinearSelfAttention
from iclab.models.registry import ModelRegistry
from iclab.runs.export_source import NUMPY_SOURCE, TORCH_SOURCE
from iclab.runs.folder import load_trained_model, read_finished_run
from iclab.tasks.registry import FamilyRegistry
from iclab.utils.errors import ConfigError

FORMATS = ("torch", "npz")
SUPPORTED = ("model lsa with one layer and one head (the paper's one-layer linear "
             "self-attention), and models that declare has_export (transformer)")
MARKER = "EXPORTED_BY_ICLAB"
"""A file every export folder holds, so that exporting again may replace it."""


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return fmt


def export_run(run_dir: str | os.PathLike[str], fmt: str, out: str | os.PathLike[str] | None,
               models: ModelRegistry | None = None,
               families: FamilyRegistry | None = None) -> Path:
    """Write the finished run's model in ``fmt`` into ``out`` (default RUN_DIR/export-FMT),
    all or nothing; the folder written. ConfigError with one line, before anything is written,
    for a bad format, a run that is not finished, a model other than ``SUPPORTED``, or an
    ``out`` that holds something other than an earlier export."""
    check_format(fmt)
    run = Path(run_dir)
    target = Path(out) if out is not None else run / f"export-{fmt}"
    if str(out if out is not None else target).strip() == "":
        raise ConfigError("--out must name a folder, got an empty string")
    config, result = read_finished_run(run, models, families)
    built = config.built_class()
    if built is not LinearSelfAttention and not built.has_export:
        raise ConfigError(f"iclab export supports {SUPPORTED}; the run in {run} has model "
                          f"{config.model_name!r} with other options")
    _check_target(target)
    model = load_trained_model(run, config, models, result)
    if isinstance(model, LinearSelfAttention):
        files = _torch_files(model) if fmt == "torch" else _npz_files(model)
    else:
        files = _exported_files(model.exported(), fmt)
    _write_folder(target, files)
    return target


def _exported_files(exported: ExportedModel, fmt: str) -> dict[str, Any]:
    """The files of a model that exports itself (``Model.exported``)."""
    if fmt == "torch":
        return {"model.py": exported.torch_source,
                "model.pt": {"state_dict": exported.state_dict, "config": exported.config}}
    arrays = {name: tensor.numpy() for name, tensor in exported.state_dict.items()}
    arrays["config_json"] = np.array(json.dumps(exported.config, sort_keys=True))
    return {"model_numpy.py": exported.numpy_source, "weights.npz": arrays}


def _constructor(model: LinearSelfAttention) -> dict[str, Any]:
    return {"d": int(model.d), "key_width": int(model.W_K.shape[0]),
            "value_width": int(model.W_V.shape[0]),
            "normalise": bool(model.options.normalise),
            "attend_query": bool(model.options.attend_query)}


def _state(model: LinearSelfAttention) -> dict[str, torch.Tensor]:
    return {name: model.state_dict()[name].detach().to(torch.float64).clone()
            for name in ("W_K", "W_Q", "W_V", "h")}


def _torch_files(model: LinearSelfAttention) -> dict[str, Any]:
    return {"model.py": TORCH_SOURCE,
            "model.pt": {"state_dict": _state(model), "config": _constructor(model)}}


def _npz_files(model: LinearSelfAttention) -> dict[str, Any]:
    arrays = {name: tensor.numpy() for name, tensor in _state(model).items()}
    flags = _constructor(model)
    arrays.update({"d": np.array(flags["d"]), "normalise": np.array(flags["normalise"]),
                   "attend_query": np.array(flags["attend_query"])})
    return {"model_numpy.py": NUMPY_SOURCE, "weights.npz": arrays}


def _check_target(target: Path) -> None:
    if target.exists() and not target.is_dir():
        raise ConfigError(f"--out {target}: exists and is not a folder")
    if target.is_dir() and any(target.iterdir()) and not (target / MARKER).is_file():
        raise ConfigError(f"--out {target}: exists, is not empty and holds no iclab export")


def _write_folder(target: Path, files: dict[str, Any]) -> None:
    """Write ``files`` into a hidden sibling folder, then put it in ``target``'s place."""
    temporary = target.parent / f".{target.name}.partial-{os.getpid()}"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(temporary, ignore_errors=True)
        temporary.mkdir()
        for name, content in files.items():
            path = temporary / name
            if isinstance(content, str):
                path.write_text(content)
            elif name.endswith(".npz"):
                np.savez(path, **content)
            else:
                torch.save(content, path)
        (temporary / MARKER).write_text("iclab export\n")
        if target.exists():
            shutil.rmtree(target)
        os.replace(temporary, target)
    except OSError as error:
        raise ConfigError(f"--out {target}: cannot write the export "
                          f"({error.strerror or type(error).__name__})") from None
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
