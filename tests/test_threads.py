"""Threads per sweep worker: workers x threads within the cores this process may use, for
torch and BLAS, overridable, refused below 1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from iclab.experiments.executors.local import LocalExecutor
from iclab.utils.errors import ConfigError
from iclab.utils.threads import check_threads, limit_threads, threads_per_worker


@pytest.mark.parametrize(("cores", "workers", "threads"), [
    (2, 2, 1), (8, 2, 4), (8, 3, 2), (8, 8, 1), (8, 16, 1), (1, 1, 1), (7, 1, 7), (9, 4, 2),
])
def test_threads_per_worker_fill_the_cores_without_exceeding_them(
        cores: int, workers: int, threads: int) -> None:
    assert threads_per_worker(workers, cores) == threads
    # never over the cores unless there are more workers than cores; one more would be
    assert workers * threads <= max(cores, workers)
    assert workers * (threads + 1) > cores


@pytest.fixture
def eight_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process allowed to run on 8 cores (cores 2..9)."""
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(2, 10)), raising=False)


@pytest.mark.usefixtures("eight_cores")
def test_the_local_executor_shares_the_affinity_set_among_its_workers() -> None:
    assert (LocalExecutor().workers, LocalExecutor().threads) == (8, 1)
    assert LocalExecutor(2).threads == 4
    assert LocalExecutor(3).threads == 2
    assert LocalExecutor(16).threads == 1
    assert (LocalExecutor(threads=3).workers, LocalExecutor(threads=3).threads) == (2, 3)
    assert (LocalExecutor(threads=9).workers, LocalExecutor(threads=9).threads) == (1, 9)
    assert (LocalExecutor(4, threads=4).workers, LocalExecutor(4, threads=4).threads) == (4, 4)


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "2"])
def test_threads_below_one_or_not_an_integer_are_refused(threads: object) -> None:
    with pytest.raises(ConfigError, match=r"--threads must be an integer >= 1, got"):
        check_threads(threads)
    with pytest.raises(ConfigError, match=r"--threads must be an integer >= 1"):
        LocalExecutor(2, threads=threads)  # type: ignore[arg-type]


def test_one_thread_is_accepted() -> None:
    assert check_threads(1) == 1 and check_threads(None) is None
    assert LocalExecutor(1, threads=1).threads == 1


@pytest.fixture
def restored() -> Iterator[None]:
    previous = torch.get_num_threads()
    with threadpool_limits(limits=None):  # restores the BLAS pools on exit
        yield
    torch.set_num_threads(previous)


@pytest.mark.usefixtures("restored")
def test_limit_threads_sets_torch_and_blas() -> None:
    import numpy as np

    np.ones((2, 2)) @ np.ones((2, 2))  # BLAS loaded
    limit_threads(1)
    pools = threadpool_info()
    assert torch.get_num_threads() == 1
    assert any(pool["user_api"] == "blas" for pool in pools)
    assert all(pool["num_threads"] == 1 for pool in pools)
    limit_threads(2)
    assert torch.get_num_threads() == 2
    assert all(pool["num_threads"] == 2 for pool in threadpool_info())
