"""``iclab.export``: ``iclab export`` as a function (``iclab.runs.export``)."""

from __future__ import annotations

import os
from pathlib import Path

from iclab.experiments.registries import Registries
from iclab.runs.export import SUPPORTED, check_format, export_run


def export(run_dir: str | os.PathLike[str], *, format: str,
           out: str | os.PathLike[str] | None = None,
           registries: Registries | None = None) -> Path:
    """Write the finished run's model as files other tools open without iclab, as ``iclab
    export``; the folder written (default RUN_DIR/export-FORMAT).

    format: "torch" (model.py, a plain PyTorch module, and model.pt, its state dict read with
    ``torch.load(weights_only=True)``) or "npz" (weights.npz and model_numpy.py).
    """
    check_format(format)
    registries = Registries() if registries is None else registries
    return export_run(run_dir, format, out, registries.models, registries.families)


export.__doc__ = (export.__doc__ or "") + f"\n    Supported: {SUPPORTED}.\n"
