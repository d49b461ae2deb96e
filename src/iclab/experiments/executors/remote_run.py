"""What a Ray task does on its node: train one run in a temporary folder, return its files.

Nothing is written on the node outside that temporary folder, which is deleted when the task
ends. The run resumes from the furthest checkpoint it is handed: the driver's unfinished run
folder, or (with ``--storage``) the copy the last attempt stored, so a run retried after its
node died picks up where it stopped. This module does not import Ray: ``run_remote`` is a
plain function that the Ray executor sends to the nodes.
"""

from __future__ import annotations

import tempfile
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iclab import __version__
from iclab.experiments.executors.checkpoint_storage import CheckpointMirror, CheckpointStorage
from iclab.experiments.executors.local import train_run
from iclab.experiments.executors.run_files import (
    RunFiles,
    checkpoint_step,
    read_run_files,
    write_run_files,
)
from iclab.utils.threads import limit_threads


@dataclass(frozen=True)
class RemoteRun:
    """One run to train remotely: its id and config (JSON form), the driver's resume files
    ({} if none), the storage URI for mid-run checkpoints (or None), the driver's version, and
    the threads (torch and BLAS) the task may use: the CPUs it asked Ray for."""

    run_id: str
    config: dict[str, Any]
    resume: RunFiles = field(default_factory=dict)
    storage: str | None = None
    version: str = __version__
    threads: int = 1
    studies: tuple[str, ...] = ()
    """The studies the command added by reference (their files must be on the node too)."""


@dataclass(frozen=True)
class RemoteResult:
    """What came back: ``error`` None on success, the run folder's files, the step the run
    resumed from (0: from the start), and a storage problem worth a warning, if any."""

    run_id: str
    error: str | None
    seconds: float
    files: RunFiles
    resumed_from: int = 0
    warning: str | None = None


def _starting_files(task: RemoteRun) -> tuple[RunFiles, str | None]:
    """The furthest of the driver's and the storage's resume files, and a storage warning."""
    if task.storage is None:
        return dict(task.resume), None
    try:
        stored = CheckpointStorage(task.storage).load(task.run_id)
    except Exception as error:
        return dict(task.resume), f"cannot read {task.storage}: {type(error).__name__}: {error}"
    if checkpoint_step(stored) > checkpoint_step(task.resume):
        return stored, None
    return dict(task.resume), None


def run_remote(task: RemoteRun) -> RemoteResult:
    """Train (or resume) ``task``'s run in a temporary folder of this node; never raises.

    Returns every file the run wrote, result.json included on success; on failure the error
    (one line) and the files written so far (for the driver to keep, as a local run would).
    """
    started = time.perf_counter()
    if task.version != __version__:
        return RemoteResult(task.run_id, f"this node runs iclab {__version__} and the driver "
                            f"iclab {task.version}: install the same version on every node",
                            time.perf_counter() - started, {})
    files, warning = _starting_files(task)
    error: str | None = None
    with tempfile.TemporaryDirectory(prefix="iclab-run-") as temporary:
        folder = Path(temporary) / task.run_id
        mirror: CheckpointMirror | None = None
        if task.storage is not None:
            try:
                mirror = CheckpointMirror(CheckpointStorage(task.storage), task.run_id, folder)
            except Exception as failure:
                warning = f"cannot use {task.storage}: {type(failure).__name__}: {failure}"
        try:
            write_run_files(folder, files)
            context: AbstractContextManager[Any] = mirror if mirror else nullcontext()
            limit_threads(task.threads)
            with context:
                train_run(task.config, folder, task.studies)
        except Exception as failure:
            error = f"{type(failure).__name__}: {failure}"
        produced = read_run_files(folder) if folder.is_dir() else {}
    if mirror is not None and mirror.error is not None:
        warning = f"cannot store checkpoints in {task.storage}: {mirror.error}"
    return RemoteResult(task.run_id, error, time.perf_counter() - started, produced,
                        checkpoint_step(files), warning)
