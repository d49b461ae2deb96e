"""The trackers' common interface, the check that a tracker's library is installed, and the
session that fans a run's config, metrics lines, result and figures out to every tracker."""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from iclab.utils.errors import ConfigError

TRACKERS = ("tensorboard", "mlflow", "wandb")
"""The names ``--track`` takes, in the order they are opened."""

_LIBRARIES = {"tensorboard": "tensorboard", "mlflow": "mlflow", "wandb": "wandb"}
"""tracker -> the module that must import for it (its extra is ``iclab[NAME]``)."""


class Tracker(Protocol):
    """One tracking backend, opened on a run folder (``open(run_dir, config, uri)``)."""

    def log_metrics(self, step: int, values: Mapping[str, float]) -> None:
        """Log one metrics line's numbers at ``step``."""

    def log_result(self, values: Mapping[str, float], verdict: str | None) -> None:
        """Log the result's numbers and the verdict (None: the run has none)."""

    def log_figure(self, path: Path) -> None:
        """Log the figure (a .png file) at ``path``."""

    def close(self, failed: bool) -> None:
        """Flush and close; ``failed``: the run stopped with an error."""


def numbers(record: Mapping[str, Any], prefix: str) -> dict[str, float]:
    """The finite numbers of ``record`` (nested mappings flattened with "/"), each key under
    ``prefix``; booleans, strings, lists and None are left out."""
    out: dict[str, float] = {}
    for key, value in record.items():
        name = f"{prefix}/{key}"
        if isinstance(value, Mapping):
            out.update(numbers(value, name))
        elif isinstance(value, int | float) and not isinstance(value, bool) \
                and math.isfinite(value):
            out[name] = float(value)
    return out


def _require(name: str) -> None:
    """ConfigError naming the pip command if ``name``'s library cannot be imported."""
    try:
        importlib.import_module(_LIBRARIES[name])
    except ImportError:
        raise ConfigError(f"--track {name} needs {_LIBRARIES[name]}, which is not installed: "
                          f"pip install 'iclab[{name}]'") from None


def _opener(name: str) -> Callable[[Path, dict[str, Any], str | None], Tracker]:
    if name == "tensorboard":
        from iclab.tracking.tensorboard_backend import open_tensorboard
        return open_tensorboard
    if name == "mlflow":
        from iclab.tracking.mlflow_backend import open_mlflow
        return open_mlflow
    from iclab.tracking.wandb_backend import open_wandb
    return open_wandb


def _open(name: str, run_dir: Path, config: dict[str, Any], uri: str | None) -> Tracker:
    """Tracker ``name`` opened on ``run_dir``; ConfigError with one line if it cannot be (an
    unreachable --track-uri, say): the run folder then holds config.json alone, and running
    the command again starts the run."""
    try:
        return _opener(name)(run_dir, config, uri)
    except Exception as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        raise ConfigError(f"--track {name}: cannot start logging ({type(error).__name__}: "
                          f"{first})") from None


@dataclass
class Session:
    """The trackers opened on one run; ``log_metrics`` is the training loop's hook."""

    trackers: list[Tracker] = field(default_factory=list)

    def log_metrics(self, record: Mapping[str, Any]) -> None:
        """Log one line of metrics.jsonl (its ``step`` and its numbers under train/)."""
        values = numbers({k: v for k, v in record.items() if k != "step"}, "train")
        for tracker in self.trackers:
            tracker.log_metrics(int(record["step"]), values)

    def finish(self, result: Mapping[str, Any], run_dir: Path) -> None:
        """Log the result's numbers (under result/), its verdict and the run's figures (the
        .png files of ``run_dir``)."""
        verdict = result.get("verdict")
        values = numbers(result, "result")
        figures = sorted(run_dir.glob("*.png"))
        for tracker in self.trackers:
            tracker.log_result(values, verdict if isinstance(verdict, str) else None)
            for figure in figures:
                tracker.log_figure(figure)


@dataclass(frozen=True)
class Tracking:
    """The trackers a run is to log to (checked: known names, installed libraries) and the
    MLflow tracking URI (None: a file store in the run folder)."""

    names: tuple[str, ...] = ()
    uri: str | None = None

    @contextmanager
    def session(self, run_dir: Path, config: dict[str, Any]) -> Iterator[Session]:
        """The trackers opened on ``run_dir`` with the run's ``config`` logged; each closed
        on leaving (marked failed when an exception leaves)."""
        session = Session()
        failed = True
        try:
            for name in self.names:
                session.trackers.append(_open(name, run_dir, config, self.uri))
            yield session
            failed = False
        finally:
            for tracker in session.trackers:
                tracker.close(failed)


def make_tracking(names: str | Sequence[str] | None = (), uri: str | None = None) -> Tracking:
    """The checked ``Tracking`` of ``--track`` names (repeats dropped) and ``--track-uri``:
    ConfigError for an unknown name, a library that is not installed, or a URI without
    mlflow. Imports each library once, so a missing one is refused before any work."""
    given = [names] if isinstance(names, str) else list(names or ())
    chosen: list[str] = []
    for name in given:
        if not isinstance(name, str) or name not in TRACKERS:
            raise ConfigError(f"--track must be one of {', '.join(TRACKERS)}, got {name!r}")
        if name not in chosen:
            chosen.append(name)
    if uri is not None:
        if not isinstance(uri, str) or not uri.strip():
            raise ConfigError(f"--track-uri must be a non-empty string, got {uri!r}")
        if "mlflow" not in chosen:
            raise ConfigError("--track-uri applies only with --track mlflow (it is MLflow's "
                              "tracking URI)")
    for name in chosen:
        _require(name)
    return Tracking(tuple(chosen), uri)
