"""Running a sweep's runs as Ray tasks (the optional extra ``iclab[ray]``).

With no address a local Ray instance with ``workers`` CPUs is started and stopped afterwards;
with an address (``ray://host:10001``, ``host:6379`` or ``auto``) the sweep joins that cluster
and only disconnects at the end. Each task trains one run with one CPU and one torch thread,
exactly as the local executor does, so results are identical; the sweep folder must be on a
file system that every node sees. Ray is imported here only, when the executor runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from iclab.errors import ConfigError
from iclab.experiments.executors import RunOutcome, RunTask, check_workers, execute_run

LOCAL_OBJECT_STORE_BYTES = 128 * 1024**2


def import_ray() -> Any:
    """The ray module, or a one-line ConfigError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--executor ray needs Ray, which is not installed; run: pip install 'iclab[ray]'"
        ) from None
    return ray


class RayExecutor:
    """Runs tasks on a Ray cluster (``address``) or a fresh local instance (no address)."""

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        self.address = address
        self.workers = check_workers(workers)
        self.ray = import_ray()

    def _connect(self) -> None:
        ray = self.ray
        common: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False,
                                  "configure_logging": True}
        if self.address is None:
            ray.init(num_cpus=self.workers, include_dashboard=False,
                     object_store_memory=LOCAL_OBJECT_STORE_BYTES, **common)
        else:
            try:
                ray.init(address=self.address, **common)
            except (ConnectionError, ValueError, RuntimeError) as error:
                raise ConfigError(f"cannot connect to Ray at {self.address!r}: {error}") from None

    def run(self, tasks: Sequence[RunTask], on_done: Callable[[RunOutcome], None]) -> None:
        if not tasks:
            return
        ray = self.ray
        if ray.is_initialized():
            raise ConfigError("Ray is already initialised in this process; call ray.shutdown()")
        self._connect()
        try:
            remote = ray.remote(num_cpus=1, max_retries=0)(execute_run)
            pending = [remote.remote(task) for task in tasks]
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    on_done(ray.get(ref))
        finally:
            ray.shutdown()
