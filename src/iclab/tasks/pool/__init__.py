"""Linear Gaussian tasks drawn from a finite pool w_1..w_K instead of the prior (docs/theory.md
section 15): the pool's checks and its seeded draw (``pool``), the pooled family and the
wrapping of a run's family (``family``)."""

from iclab.tasks.pool.family import PooledLinearGaussian, with_pool
from iclab.tasks.pool.pool import MAX_POOL, check_pool, draw_pool, load_pool

__all__ = ["MAX_POOL", "PooledLinearGaussian", "check_pool", "draw_pool", "load_pool", "with_pool"]
