"""``iclab.train``: ``iclab train`` as a function, by the same code path
(``iclab.cli.train.train_run``), so that the same options give the same numbers."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from iclab.api.options import check_run_options, run_options_doc
from iclab.api.results import TrainResult
from iclab.cli.run_options import config_from_options
from iclab.cli.train import train_run
from iclab.config.sections import MODEL_KEY
from iclab.experiments.registries import Registries
from iclab.tracking import make_tracking
from iclab.utils.errors import ConfigError
from iclab.utils.plugins import is_plugin_reference


def train(*, out: str | os.PathLike[str] | None = None, registries: Registries | None = None,
          quiet: bool = True, restart: bool = False,
          track: str | Sequence[str] | None = None, track_uri: str | None = None,
          **options: Any) -> TrainResult:
    """Train a model on a task family's prompts and judge it against theory, as ``iclab
    train`` does (the same options, checks and numbers), and return the run's result.

    out: the run folder (``--out``); running again resumes an interrupted run and reads a
    finished one back. registries: the models, families and studies to use (an
    ``iclab.experiments.registries.Registries``; default: the core and every installed
    study), so that a caller's own model or family can be named. quiet: no progress bar
    (default True). restart: remove the run's checkpoint, metrics and result first.
    track: an experiment tracker, or several ("tensorboard", "mlflow", "wandb"; ``--track``),
    to log the config, every metrics line, the result and the figures to; track_uri:
    MLflow's tracking URI (``--track-uri``; default: a file store in OUT/mlruns).
    Every other keyword is an option of ``iclab train`` by its name (``--key-dim`` is
    ``key_dim``), listed below; a model's options apply only with that ``model=`` and a
    family's only with that ``family=``. Bad input raises ``iclab.Error`` with the command
    line's one-line message, before any file is written.
    """
    registries = Registries() if registries is None else registries
    model = options.get(MODEL_KEY)
    if isinstance(model, str) and is_plugin_reference(model) \
            and model not in registries.models.names:
        registries.models.register(registries.models.get(model), model)
    values = check_run_options(dict(options), registries)
    tracking = make_tracking(track, track_uri)
    if not isinstance(out, str | os.PathLike):  # the options first: their line names them
        config_from_options(dict(values), registries)
        raise ConfigError(f"--out must name the run folder (a string or path), got {out!r}")
    config, result = train_run(values, registries, registries, os.fspath(out), quiet, restart,
                               tracking)
    return TrainResult.of(config=config, run_dir=Path(out), result=result,
                          registries=registries)


def document(registries: Registries) -> None:
    """Add the option list, generated from the declarations, to ``train``'s docstring."""
    listed = textwrap.indent(run_options_doc(registries), "    ")
    train.__doc__ = (train.__doc__ or "") + listed + "\n"
