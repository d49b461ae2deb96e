"""The ``pool`` study: task diversity (Raventos et al. 2023; docs/theory.md section 15). A
linear Gaussian family whose task is drawn from a finite pool (``pool``, ``family``: the
``tasks`` and ``task_pool`` options it adds to ``linear-gaussian``), the exact pool loss and
its optimum, nuisance terms included (``loss``, ``optimum``), the pool's Bayes predictor
(``dmmse``), a pooled run's evaluation on pool and fresh tasks (``evaluate``), ``iclab theory
--task-pool`` (``theory_mode``) and the ``pool-*`` claim kinds (``claims``). Its one
declaration, ``STUDY``, is listed under the ``iclab.studies`` entry points like a user's
installed study."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iclab.cli.theory.modes import TheoryMode
from iclab.experiments.specs.builtin import reproduce_sections
from iclab.studies.pool.claims import POOL_KINDS
from iclab.studies.pool.family import with_pool
from iclab.studies.pool.pool import PoolOptions
from iclab.studies.pool.theory_mode import pool_mode
from iclab.tasks.base import TaskFamily
from iclab.tasks.family_entry import FamilyExtension
from iclab.utils.studies import Study


def _pooled(family: TaskFamily, options: PoolOptions, family_options: Any,
            seed: int) -> TaskFamily:
    pooled: TaskFamily = with_pool(family, options.tasks, options.task_pool, seed)
    return pooled


def _pool_asked(options: dict[str, Any]) -> bool:
    return options.get("tasks") is not None or options.get("task_pool") is not None


POOL_EXTENSION = FamilyExtension("pool", ("linear-gaussian",), PoolOptions, _pooled)

HERE = Path(__file__).parent
"""The study's folder: its sections of iclab reproduce."""

STUDY = Study(
    "pool",
    "a one-layer LSA trained on a finite task pool, beside the pool's exact optimum and dMMSE",
    requires=("covariates",),
    claim_kinds=lambda: tuple(kind() for kind in POOL_KINDS),
    family_extensions=lambda: (POOL_EXTENSION,),
    theory_modes=lambda: (TheoryMode("task pool", lambda: (), _pool_asked, pool_mode),),
    spec_sections=lambda: reproduce_sections(HERE),
)
