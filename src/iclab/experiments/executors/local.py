"""Running a sweep's runs: the task a worker executes, and the local process-pool executor.

Every run is deterministic on the CPU from its config alone, and each worker trains with one
torch thread, so results do not depend on the executor or the number of workers. A worker
holds an exclusive lock on its run while training: if a killed sweep leaves an orphan worker
behind, a new sweep waits for it instead of writing the same folder twice (and orphans notice
their parent is gone and exit).
"""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from iclab.utils.errors import ConfigError
from iclab.utils.signals import release_stop_signals, stop_signals_deferred

PARENT_POLL_SECONDS = 0.5
_STOPPING = False
"""Set in a pool worker that received SIGTERM."""


@dataclass(frozen=True)
class RunTask:
    """What a worker needs: the run's id, its config (JSON form), its folder and lock file."""

    run_id: str
    config: dict[str, Any]
    run_dir: str
    lock_path: str


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended: ``error`` is None on success, else one line naming the failure."""

    run_id: str
    error: str | None
    seconds: float


def train_run(config: dict[str, Any], run_dir: Path) -> None:
    """Train, resume or skip the run of ``config`` (JSON form) in ``run_dir``.

    The one call through which every executor trains a run: locally in the sweep folder, or
    in a temporary folder on a Ray node. It writes the run folder (config.json first,
    result.json atomically and last) and raises on failure.
    """
    from iclab.config.train import TrainConfig
    from iclab.runs.pipeline import run_training

    # this worker's registries: the core and every installed study (run_training's default)
    run_training(TrainConfig.from_json(config), Path(run_dir), progress=False)


def execute_run(task: RunTask) -> RunOutcome:
    """Train (or resume, or skip) one run in its folder; never raises."""
    import torch

    torch.set_num_threads(1)
    started = time.perf_counter()
    try:
        Path(task.lock_path).parent.mkdir(parents=True, exist_ok=True)
        with open(task.lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            train_run(task.config, Path(task.run_dir))
    except Exception as error:
        return RunOutcome(task.run_id, f"{type(error).__name__}: {error}",
                          time.perf_counter() - started)
    except SystemExit as stop:
        if _STOPPING:  # SIGTERM in a pool worker: the run's files are cleaned up by now
            os._exit(stop.code if isinstance(stop.code, int) else 1)
        raise
    return RunOutcome(task.run_id, None, time.perf_counter() - started)


class Executor(Protocol):
    """Runs tasks, calling ``on_done`` in the calling thread as each one finishes."""

    def run(self, tasks: Sequence[RunTask], on_done: Callable[[RunOutcome], None]) -> None:
        ...


def default_workers() -> int:
    """One worker per core available to this process."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - platforms without sched_getaffinity
        return max(1, os.cpu_count() or 1)


def check_workers(workers: int | None) -> int:
    """``workers`` validated (None means one per core)."""
    if workers is None:
        return default_workers()
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers must be an integer >= 1, got {workers!r}")
    return workers


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(PARENT_POLL_SECONDS)
        if os.getppid() != parent:
            os._exit(1)


def _stop(signum: int, frame: FrameType | None) -> None:
    """SIGTERM in a worker: unwind (a file being written atomically is removed) and exit."""
    global _STOPPING
    _STOPPING = True
    raise SystemExit(128 + signum)


def _init_worker(parent: int) -> None:
    from tqdm import tqdm

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    signal.signal(signal.SIGTERM, _stop)
    # tqdm's default lock is a multiprocessing semaphore, which a stopped worker would leak
    tqdm.set_lock(threading.RLock())
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    try:  # blocked by the parent while it started us
        release_stop_signals()
    except SystemExit as stop:  # stopped before any work: nothing to clean up
        os._exit(stop.code if isinstance(stop.code, int) else 1)


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Cancel the queued runs and stop the running ones now (SIGTERM: each removes its
    temporary files and exits; its run resumes from its last checkpoint next time)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # shutdown forgets
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)
        if process.is_alive():  # stuck in a long native call: kill it
            process.kill()
            process.join()
    pool.shutdown(wait=True, cancel_futures=True)  # the workers are gone: returns at once


def _outcome(future: Future[RunOutcome], task: RunTask) -> RunOutcome:
    """The future's outcome; a failure, not an exception, if its worker process died."""
    try:
        return future.result()
    except BrokenProcessPool:
        return RunOutcome(task.run_id, "its worker process died (killed, or out of memory?)",
                          0.0)


class LocalExecutor:
    """Runs tasks in ``workers`` spawned processes on this machine.

    Interrupted (Ctrl-C, SIGTERM in the ``iclab`` command), it cancels the queued runs and
    stops the running ones at once; running the sweep again resumes them.
    """

    def __init__(self, workers: int | None = None) -> None:
        self.workers = check_workers(workers)

    def run(self, tasks: Sequence[RunTask], on_done: Callable[[RunOutcome], None]) -> None:
        if not tasks:
            return
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(min(self.workers, len(tasks)), mp_context=context,
                                   initializer=_init_worker, initargs=(os.getpid(),))
        try:
            with stop_signals_deferred():  # workers start with them held back
                runs: dict[Future[RunOutcome], RunTask] = {
                    pool.submit(execute_run, task): task for task in tasks}
            pending = set(runs)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    on_done(_outcome(future, runs[future]))
        except BaseException:
            _terminate(pool)
            raise
        pool.shutdown(wait=True)
