"""The baselines a task family declares for itself, beside the ones every family gets.

A family names its own baselines in an optional ``baselines`` attribute (a tuple of
factories ``(family, seed) -> predictor``, asked with ``getattr``; the families of the
``garg`` study declare theirs: Lasso for sparse regression, gradient-boosted trees for decision
trees, a fitted two-layer ReLU network for ReLU networks). ``family_baselines`` makes those
predictors; the prefix evaluation runs them on the same prompts as the model and the generic
baselines.
"""

from __future__ import annotations

from collections.abc import Callable

from iclab.algorithms.base import InContextPredictor
from iclab.tasks.base import TaskFamily
from iclab.utils.errors import ConfigError

BaselineFactory = Callable[[TaskFamily, int], InContextPredictor]
"""(the family, a seed) -> the predictor. A predictor declares ``max_prompts`` (an int, or
None for no limit; ``InContextPredictor``): the number of prompts worth giving it in an
evaluation that runs it on every prefix (the scikit-learn ones fit each prompt alone)."""


def family_baselines(task: TaskFamily, seed: int) -> list[InContextPredictor]:
    """The predictors the factories of ``task.baselines`` make (none when the family
    declares none)."""
    factories = task.baselines
    if not isinstance(factories, tuple) or not all(callable(f) for f in factories):
        raise ConfigError(f"family {task.name!r}: baselines must be a tuple of factories "
                          f"(family, seed) -> predictor, got {factories!r}")
    return [factory(task, seed) for factory in factories]


def prompt_limit(predictor: InContextPredictor, available: int) -> int:
    """How many of ``available`` prompts to give ``predictor`` in an evaluation that runs it on
    every prefix: all of them, or its ``max_prompts`` where it declares fewer (the predictors
    that fit each prompt alone with scikit-learn)."""
    limit = predictor.max_prompts
    return available if limit is None else max(1, min(available, int(limit)))
