"""Running a sweep's runs as Ray tasks (the optional extra ``iclab[ray]``).

With no address a private local Ray instance with ``workers`` CPUs is started and stopped
afterwards; with an address the sweep joins that cluster (``ray_connect``) and only
disconnects at the end. Each task trains one run with one CPU and one torch thread in a
temporary folder of its node and returns the run's files (``remote_run``); the driver writes
them under the sweep folder, resolved on the driver, result.json last. So no node needs to
see the sweep folder, and results are identical to the local executor's.

Faults: a task whose worker or node dies is retried on another node (``retries`` times), and
the run is the same whichever attempt finishes, since it is identified by its config hash and
deterministic. With ``storage`` the retry resumes from the last checkpoint the dead attempt
stored. A run that still fails is reported, and running the sweep again retries it. Ctrl-C
cancels every task of the sweep on the cluster before the driver disconnects.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from iclab.experiments.executors.checkpoint_storage import CheckpointStorage, resolve_storage
from iclab.experiments.executors.local import RunOutcome, RunTask, check_workers
from iclab.experiments.executors.ray_connect import (
    check_connect_timeout,
    connect,
    import_ray,
    parse_address,
    start_local,
)
from iclab.experiments.executors.remote_run import RemoteResult, RemoteRun, run_remote
from iclab.experiments.executors.run_files import RESULT, resume_files, write_run_files
from iclab.utils.errors import ConfigError
from iclab.utils.threads import check_threads

TASK_RETRIES = 4
"""How often a task is re-run after its worker process or node died (Ray's max_retries)."""

WAIT_SECONDS = 0.5
"""The longest the driver blocks in Ray at a time, so Ctrl-C is handled promptly."""

logger = logging.getLogger(__name__)


class RayExecutor:
    """Runs tasks on a Ray cluster (``address``) or a fresh local instance (no address).

    ``workers``: the local instance's CPUs (default one per core); with an address, the most
    runs in flight at once (default: as many as the cluster schedules). ``storage``: an fsspec
    URI for mid-run checkpoints. ``connect_timeout``: seconds to reach the cluster (30).
    ``threads``: the CPUs each task asks Ray for and the threads (torch and BLAS) it uses
    (default 1); the local instance has ``workers`` x ``threads`` CPUs.
    """

    def __init__(self, address: str | None = None, workers: int | None = None,
                 storage: str | None = None, connect_timeout: float | None = None,
                 retries: int = TASK_RETRIES, threads: int | None = None) -> None:
        self.address = None if address is None else parse_address(address)
        asked = check_threads(threads)
        self.threads = asked or 1
        self.workers = check_workers(workers, asked)
        self.limit = workers if address is not None else None
        self.storage = None if storage is None else resolve_storage(storage)
        self.connect_timeout = check_connect_timeout(connect_timeout)
        self.retries = retries
        self.ray = import_ray()

    def _connect(self) -> None:
        if self.ray.is_initialized():
            raise ConfigError("Ray is already initialised in this process; call ray.shutdown()")
        if self.address is None:
            start_local(self.ray, self.workers * self.threads)
        else:
            connect(self.ray, self.address, self.connect_timeout)

    def run(self, tasks: Sequence[RunTask], on_done: Callable[[RunOutcome], None]) -> None:
        if not tasks:
            return
        ray = self.ray
        self._connect()
        in_flight: dict[Any, RunTask] = {}
        try:
            remote = ray.remote(num_cpus=self.threads, max_retries=self.retries,
                                retry_exceptions=False)(run_remote)
            queue = list(tasks)
            limit = self.limit or len(queue)

            def submit() -> None:
                task = queue.pop(0)
                payload = RemoteRun(task.run_id, task.config, resume_files(Path(task.run_dir)),
                                    self.storage, threads=self.threads, studies=task.studies)
                in_flight[remote.remote(payload)] = task

            while queue and len(in_flight) < limit:
                submit()
            while in_flight:
                done, _ = ray.wait(list(in_flight), num_returns=1, timeout=WAIT_SECONDS)
                for ref in done:
                    task = in_flight.pop(ref)
                    on_done(self._finish(task, ref))
                    if queue:
                        submit()
        except BaseException:
            self._cancel(list(in_flight))
            raise
        finally:
            ray.shutdown()

    def _finish(self, task: RunTask, ref: Any) -> RunOutcome:
        """Fetch a finished task's result and write its run folder on the driver."""
        try:
            result: RemoteResult = self.ray.get(ref)
        except self.ray.exceptions.RayError as error:
            lines = [line.strip() for line in str(error).splitlines() if line.strip()]
            first = lines[0] if lines else ""
            return RunOutcome(task.run_id, f"{type(error).__name__}: {first}", 0.0)
        if result.warning is not None:
            logger.warning("run %s: %s", task.run_id, result.warning)
        try:
            write_run_files(Path(task.run_dir), result.files)
        except (OSError, ConfigError) as error:
            return RunOutcome(task.run_id, f"cannot write {task.run_dir}: {error}",
                              result.seconds)
        if result.error is None and RESULT not in result.files:
            return RunOutcome(task.run_id, "the run returned no result.json", result.seconds)
        if result.error is None and self.storage is not None:
            try:
                CheckpointStorage(self.storage).remove(task.run_id)
            except Exception as error:  # the stored copy is only a spare
                logger.warning("run %s: cannot remove its checkpoints from %s: %s",
                               task.run_id, self.storage, error)
        return RunOutcome(task.run_id, result.error, result.seconds)

    def _cancel(self, refs: list[Any]) -> None:
        """Cancel ``refs`` on the cluster (killing their worker processes), best effort."""
        for ref in refs:
            try:
                self.ray.cancel(ref, force=True)
            except Exception as error:  # the connection may already be gone
                logger.debug("cannot cancel %s: %s", ref, error)
