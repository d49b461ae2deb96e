"""Running a sweep's runs: the task a worker executes, and the local process-pool executor.

Every run is deterministic on the CPU from its config alone, and trains with one torch thread
(``iclab.training.loop``), so results do not depend on the executor or the number of workers.
Each worker process may use ``threads`` threads (torch and BLAS) outside training: by default
the cores this process may use divided among the workers (``threads_per_worker``), so the
workers never ask for more cores than there are; results are bit-identical for a fixed count.
A worker holds an exclusive lock on its run while training: if a killed sweep leaves an orphan
worker behind, a new sweep waits for it instead of writing the same folder twice (and orphans
notice their parent is gone and exit).
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
from iclab.utils.threads import available_cores, check_threads, limit_threads, threads_per_worker

PARENT_POLL_SECONDS = 0.5
_STOPPING = False
"""Set in a pool worker that received SIGTERM."""
_WORKER_THREADS = 1
"""The threads (torch and BLAS) of this worker process, set when the pool starts it."""


@dataclass(frozen=True)
class RunTask:
    """What a worker needs: the run's id, its config (JSON form), its folder and lock file,
    and the studies the command added by reference (``--study FILE.py:STUDY``), which the
    worker loads beside the installed ones."""

    run_id: str
    config: dict[str, Any]
    run_dir: str
    lock_path: str
    studies: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended: ``error`` is None on success, else one line naming the failure."""

    run_id: str
    error: str | None
    seconds: float


def train_run(config: dict[str, Any], run_dir: Path, studies: tuple[str, ...] = ()) -> None:
    """Train, resume or skip the run of ``config`` (JSON form) in ``run_dir``, with the
    registries of the installed studies and those named in ``studies`` (references).

    The one call through which every executor trains a run: locally in the sweep folder, or
    in a temporary folder on a Ray node. It writes the run folder (config.json first,
    result.json atomically and last) and raises on failure.
    """
    from iclab.config.train import TrainConfig
    from iclab.runs.pipeline import run_registries, run_training

    registries = run_registries(studies)  # this worker's, built once
    run_training(TrainConfig.from_json(config, registries.models, families=registries.families),
                 Path(run_dir), progress=False, registries=registries)


def execute_run(task: RunTask, threads: int | None = None) -> RunOutcome:
    """Train (or resume, or skip) one run in its folder with ``threads`` threads (default:
    this worker's); never raises."""
    limit_threads(threads or _WORKER_THREADS)
    started = time.perf_counter()
    try:
        Path(task.lock_path).parent.mkdir(parents=True, exist_ok=True)
        with open(task.lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            train_run(task.config, Path(task.run_dir), task.studies)
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


def default_workers(threads: int | None = None) -> int:
    """One worker per ``threads`` cores available to this process (default: per core)."""
    return max(1, available_cores() // (threads or 1))


def check_workers(workers: int | None, threads: int | None = None) -> int:
    """``workers`` validated (None means one per ``threads`` cores, or per core)."""
    if workers is None:
        return default_workers(threads)
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


def _init_worker(parent: int, threads: int) -> None:
    from tqdm import tqdm

    global _WORKER_THREADS
    _WORKER_THREADS = threads
    limit_threads(threads)

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
    """Runs tasks in ``workers`` spawned processes on this machine, each with ``threads``
    threads (default: ``threads_per_worker``; with ``threads`` and no ``workers``, one worker
    per ``threads`` cores).

    Interrupted (Ctrl-C, SIGTERM in the ``iclab`` command), it cancels the queued runs and
    stops the running ones at once; running the sweep again resumes them.
    """

    def __init__(self, workers: int | None = None, threads: int | None = None) -> None:
        asked = check_threads(threads)
        self.workers = check_workers(workers, asked)
        self.threads = asked or threads_per_worker(self.workers)

    def run(self, tasks: Sequence[RunTask], on_done: Callable[[RunOutcome], None]) -> None:
        if not tasks:
            return
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(min(self.workers, len(tasks)), mp_context=context,
                                   initializer=_init_worker,
                                   initargs=(os.getpid(), self.threads))
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
