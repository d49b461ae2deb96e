"""The one-layer LSA under a finite task pool (docs/theory.md section 15): the exact pool loss
of any (u, M) (``loss``) and its global optimum, nuisance terms included, beside the
nuisance-free optimum (``optimum``)."""

from iclab.tasks.pool import check_pool
from iclab.theory.pool.loss import PoolLoss
from iclab.theory.pool.optimum import PoolOptimum, local_optimum, pool_optimum

__all__ = ["PoolLoss", "PoolOptimum", "check_pool", "local_optimum", "pool_optimum"]
