"""MLflow: a run of the experiment "iclab" in a local file store in the run folder
(RUN/mlruns) unless ``--track-uri`` names another tracking URI; written with MlflowClient, so
no process-wide active run is left behind."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

EXPERIMENT = "iclab"
"""The MLflow experiment every run is logged under."""

FOLDER = "mlruns"
"""The default file store's folder inside the run folder (``mlflow ui --backend-store-uri
RUN/mlruns``)."""

PARAM_LENGTH = 6000
"""The longest parameter value MLflow stores; longer config values are cut (config.json is
also logged whole, as an artifact)."""


def default_uri(run_dir: Path) -> str:
    """The file store in ``run_dir``: file:///.../RUN/mlruns."""
    return (run_dir / FOLDER).resolve().as_uri()


class MlflowTracker:
    """Params (the config), metrics per step (train/...), the result's numbers (result/...),
    the verdict as a tag, the figures and the run folder's JSON files when it opens (its
    config.json, written first) as artifacts."""

    def __init__(self, run_dir: Path, config: dict[str, Any], uri: str) -> None:
        if urlparse(uri).scheme in ("", "file"):
            # MLflow 3.7+ refuses file stores unless opted in; the default here is one.
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient

        self._client = MlflowClient(tracking_uri=uri)
        experiment = self._client.get_experiment_by_name(EXPERIMENT)
        experiment_id = (experiment.experiment_id if experiment is not None
                         else self._client.create_experiment(EXPERIMENT))
        run = self._client.create_run(experiment_id, run_name=run_dir.resolve().name,
                                      tags={"iclab.run_dir": str(run_dir.resolve())})
        self.run_id: str = run.info.run_id
        self._step = 0
        params = [Param(key, str(value)[:PARAM_LENGTH]) for key, value in config.items()]
        self._client.log_batch(self.run_id, params=params)
        for record in sorted(run_dir.glob("*.json")):  # the run's config (and task pool) files
            self._client.log_artifact(self.run_id, str(record))

    def _log(self, values: Mapping[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(key, value, now, step) for key, value in values.items()]
        if metrics:
            self._client.log_batch(self.run_id, metrics=metrics)

    def log_metrics(self, step: int, values: Mapping[str, float]) -> None:
        self._step = step
        self._log(values, step)

    def log_result(self, values: Mapping[str, float], verdict: str | None) -> None:
        self._log(values, self._step)
        if verdict is not None:
            self._client.set_tag(self.run_id, "verdict", verdict)

    def log_figure(self, path: Path) -> None:
        self._client.log_artifact(self.run_id, str(path), artifact_path="figures")

    def close(self, failed: bool) -> None:
        self._client.set_terminated(self.run_id, "FAILED" if failed else "FINISHED")


def open_mlflow(run_dir: Path, config: dict[str, Any], uri: str | None) -> MlflowTracker:
    """An MLflow run at ``uri`` (None: the file store RUN/mlruns)."""
    return MlflowTracker(run_dir, config, uri or default_uri(run_dir))
