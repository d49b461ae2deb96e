"""How many threads torch and BLAS use: for a block of work, and for a sweep's worker.

A neutral module: training (``iclab.training.loop``) and the analyses that evaluate many small
batches (``iclab.analysis``) both run with few threads, and neither package imports the other.
A sweep's executor gives each worker process ``threads_per_worker`` threads, so that the
workers together use at most the cores this process may run on (``os.sched_getaffinity``):
on a busy or shared machine a worker that waits for a descheduled thread of its own is slower
than a single-threaded one. ``limit_threads`` applies a count to torch's intra-op pool and to
the BLAS libraries numpy and scipy loaded (OpenBLAS, MKL; through threadpoolctl).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from iclab.utils.errors import ConfigError


@contextmanager
def intra_op_threads(count: int) -> Iterator[None]:
    """Run the block with ``count`` intra-op threads, restoring the previous number after."""
    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def available_cores() -> int:
    """The number of cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - platforms without sched_getaffinity
        return max(1, os.cpu_count() or 1)


def threads_per_worker(workers: int, cores: int | None = None) -> int:
    """The threads each of ``workers`` processes may use so that workers x threads <= cores
    (``cores``: default ``available_cores()``); at least 1 (more workers than cores: 1)."""
    cores = available_cores() if cores is None else cores
    return max(1, cores // max(1, workers))


def check_threads(threads: object, option: str = "--threads") -> int | None:
    """``threads`` (None: chosen per worker) as an integer >= 1; ConfigError otherwise."""
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ConfigError(f"{option} must be an integer >= 1, got {threads!r}")
    return threads


def limit_threads(count: int) -> None:
    """Use ``count`` threads in this process from now on: torch's intra-op pool, and the BLAS
    and OpenMP libraries loaded (numpy's OpenBLAS: threadpoolctl)."""
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(count)
    threadpool_limits(limits=count)
