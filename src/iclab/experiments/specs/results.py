"""A sweep's results as read back from its run folders: records, sites, and the CSV files.

Everything downstream of the runs (claims, figures, report) reads result.json files through
here, never live objects. results.csv holds deterministic quantities only (bit-identical
whatever the executor, the number of workers or interruptions); timings go to timings.csv.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from iclab.config.sections import OptimConfig, RunConfig
from iclab.experiments.specs.groups import Point
from iclab.experiments.specs.spec import Spec
from iclab.training.run_folder import RESULT, RunFolder
from iclab.utils.errors import ConfigError
from iclab.utils.fields import default_of, field_infos
from iclab.utils.io import atomic_write_text

RESULT_COLUMNS = (
    "eta_hat", "eta_star", "eta_star_stderr", "eta_rel_err", "isotropy_err", "gamma_rel_err",
    "nuisance_max", "test_loss", "test_loss_stderr", "loss_star",
)


def config_columns(records: dict[str, RunRecord]) -> list[str]:
    """Every scalar config key of the runs, from the declarations (``iclab.config``): family
    first, then in declaration order; covariances are summarised by their spec labels (a
    context_covariance column by its label), and a model's options appear once some run uses
    that model."""
    names: dict[str, None] = {"family": None}
    for record in records.values():
        for key in record.point.config.to_json():
            if key not in ("cov_x", "cov_w"):
                names.setdefault(key, None)
    return list(names)


def _omitted_defaults(record: RunRecord) -> dict[str, Any]:
    """The defaults of the run's fields that the JSON form leaves out while at them (its
    family's task section, the fixed sections and its model's options)."""
    config = record.point.config
    defaults = {}
    for cls in (type(config.task), OptimConfig, RunConfig, type(config.model)):
        for name, (f, info) in field_infos(cls).items():
            if info.omit_default:
                defaults[name] = default_of(f)
    return defaults


def _config_cell(record: RunRecord, config: dict[str, Any], column: str) -> str:
    """A run's value in ``column``: a position covariance by its label, a field left out of
    the JSON form by its default (x_law "gaussian"), anything else as written."""
    if column == "context_covariance":
        return record.point.context_covariance_label
    if column not in config:
        return _cell(_omitted_defaults(record).get(column))
    return _cell(config.get(column))


@dataclass(frozen=True)
class RunRecord:
    """One finished run: the point of the spec it ran and its result.json."""

    point: Point
    result: dict[str, Any]

    @property
    def gamma(self) -> np.ndarray:
        """The learned Gamma: (d, d) float64."""
        return np.asarray(self.result["gamma"], dtype=np.float64)

    @property
    def depth(self) -> int | None:
        """The depth the run's model declares (``TrainConfig.depth``): L for an L-layer
        stack judged against the optimal L-step GD, None for one layer."""
        return self.point.config.depth()

    @property
    def layers(self) -> int:
        """The layers the run's model stacks: its depth, 1 for a one-layer model."""
        depth = self.depth
        return 1 if depth is None else depth

    @property
    def gamma_star(self) -> np.ndarray:
        """The optimum's Gamma*: (d, d) float64."""
        return np.asarray(self.result["gamma_star"], dtype=np.float64)


@dataclass(frozen=True)
class Site:
    """The runs of one group that differ only in their seed, and what sets the site apart."""

    label: str
    values: dict[str, Any]
    records: tuple[RunRecord, ...]

    @property
    def config(self) -> dict[str, Any]:
        """The config of the site's first seed (JSON form)."""
        return self.records[0].point.config.to_json()

    def mean(self, key: str) -> float:
        """The mean over seeds of a scalar result key."""
        return float(np.mean([float(r.result[key]) for r in self.records]))

    def mean_stderr(self, key: str) -> float:
        """The standard error of ``mean(key)``, from each seed's ``KEY_stderr``
        (``stderr_of_mean``)."""
        return stderr_of_mean([float(r.result[f"{key}_stderr"]) for r in self.records])


def stderr_of_mean(errors: Sequence[float]) -> float:
    """The standard error of the mean of independent estimates with standard errors
    ``errors``: sqrt(sum se_i^2) / count."""
    return math.sqrt(sum(e * e for e in errors)) / len(errors)


def run_dir(out_dir: Path, run_id: str) -> Path:
    """The folder of run ``run_id`` in sweep folder ``out_dir``."""
    return Path(out_dir) / "runs" / run_id


def is_finished(out_dir: Path, run_id: str) -> bool:
    return (run_dir(out_dir, run_id) / RESULT).exists()


def load_records(spec: Spec, out_dir: Path) -> dict[str, RunRecord]:
    """run_id -> record for every point of ``spec``, in spec order; all must be finished."""
    records = {}
    for point in spec.points():
        folder = RunFolder(run_dir(out_dir, point.run_id))
        if not folder.finished:
            raise ConfigError(f"{folder.result} is missing: run the sweep to completion first")
        records[point.run_id] = RunRecord(point, folder.read_result((), point.config.hash()))
    return records


def gd_loss(record: RunRecord) -> tuple[float, float]:
    """(loss, stderr) of the optimal GD with the run's number of layers: gd_steps_loss for an
    L-layer run (``RunRecord.depth``), or for a one-layer run the optimal one-layer LSA loss
    L* (one step of preconditioned GD for linear Gaussian tasks)."""
    result = record.result
    if record.depth is not None:
        return float(result["gd_steps_loss"]), float(result.get("gd_steps_loss_stderr") or 0.0)
    return float(result["loss_star"]), float(result.get("loss_star_stderr") or 0.0)


def axis_value(point: Point, axis: str) -> Any:
    """The value of setting ``axis`` in a point's config, also where its JSON form leaves it
    out at its default (``layers = 1``, say)."""
    data = point.config.to_json()
    if axis in data:
        return data[axis]
    config = point.config
    for section in (config.model, config.task, config.optim, config.run):
        if hasattr(section, axis):
            return getattr(section, axis)
    raise KeyError(axis)


def sites(spec: Spec, records: dict[str, RunRecord], group: str) -> list[Site]:
    """The group's sites in spec order, each holding its runs (one per seed)."""
    spec_group = spec.group(group)
    order: dict[str, list[RunRecord]] = {}
    values: dict[str, dict[str, Any]] = {}
    for point in spec_group.points:
        site_values = {axis: axis_value(point, axis) for axis in spec_group.axes}
        label = ", ".join(f"{k}={v}" for k, v in site_values.items())
        order.setdefault(label, []).append(records[point.run_id])
        values[label] = site_values
    return [Site(label, values[label], tuple(runs)) for label, runs in order.items()]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _csv(rows: list[list[str]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerows(rows)
    return buffer.getvalue()


def results_rows(records: dict[str, RunRecord]) -> list[list[str]]:
    """Header and one row per run (spec order): config, covariance labels, result numbers."""
    columns = config_columns(records)
    header = ["run", "groups", *columns, "cov_x", "cov_w", *RESULT_COLUMNS]
    rows = [header]
    for run_id, record in records.items():
        config, result = record.point.config.to_json(), record.result
        nuisance = result.get("nuisance") or {}
        numbers = {**result, "nuisance_max": max(nuisance.values()) if nuisance else None}
        rows.append([run_id, ";".join(record.point.groups),
                     *(_config_cell(record, config, c) for c in columns),
                     record.point.cov_x_label, record.point.cov_w_label,
                     *(_cell(numbers.get(c)) for c in RESULT_COLUMNS)])
    return rows


def write_tables(records: dict[str, RunRecord], out_dir: Path) -> None:
    """Write results.csv (deterministic) and timings.csv (wall and CPU seconds, and the
    threads the run's process used; empty for a run finished before it was recorded)
    atomically."""
    atomic_write_text(Path(out_dir) / "results.csv", _csv(results_rows(records)))
    timings = [["run", "groups", "wall_seconds", "cpu_seconds", "threads"]]
    timings += [[run_id, ";".join(r.point.groups), _cell(r.result.get("wall_seconds")),
                 _cell(r.result.get("cpu_seconds")), _cell(r.result.get("threads"))]
                for run_id, r in records.items()]
    atomic_write_text(Path(out_dir) / "timings.csv", _csv(timings))
