"""An up-front bound on the cost of the pool optimum's search (``optimum.pool_optimum``), so
that ``iclab theory --tasks K`` refuses a pool whose search would run for minutes instead of
starting it.

Every evaluation of the reduced loss f(u) touches the K token covariances, K (d+1)^2 numbers,
and the search runs d + 1 + starts L-BFGS descents; the work unit is their product. Measured on
one loaded core (2 cores shared): K = 10^4 at d = 3 (4.5e6 units) 11 s, K = 3000 (1.3e6) up
to 16 s (the descents' lengths vary with the pool), K = 10^5 (4.5e7) 65 s."""

from __future__ import annotations

from iclab.utils.errors import ConfigError

MAX_POOL_WORK = 4.5e6
"""The most work units accepted: K = 10^4 tasks at d = 3, about 10 to 50 s."""


def pool_work(tasks: int, d: int, starts: int) -> float:
    """K (d+1)^2 (d + 1 + starts): the search's work units."""
    return float(tasks) * (d + 1) ** 2 * (d + 1 + starts)


def check_pool_work(tasks: int, d: int, starts: int, name: str = "--tasks") -> None:
    """ConfigError (one line naming ``name`` and the limit) when the search over a pool of
    ``tasks`` tasks in dimension d is over MAX_POOL_WORK."""
    work = pool_work(tasks, d, starts)
    if work > MAX_POOL_WORK:
        most = int(MAX_POOL_WORK / pool_work(1, d, starts))
        raise ConfigError(f"{name} {tasks}: the pool optimum over {tasks} tasks at d={d} "
                          f"needs about {work:.1e} work units (limit {MAX_POOL_WORK:.1e}, about "
                          f"a minute): give at most {most} tasks at this d")
