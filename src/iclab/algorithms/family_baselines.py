"""The baselines a task family declares for itself, beside the ones every family gets.

A family names its own baselines in an optional ``baselines`` attribute (a tuple of names,
asked with ``getattr``; the built-in families of Garg et al. declare theirs: Lasso for sparse
regression, gradient-boosted trees for decision trees, a fitted two-layer ReLU network for
ReLU networks). ``family_baselines`` turns those names into predictors; the prefix
evaluation runs them on the same prompts as the model and the generic baselines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from iclab.algorithms.base import InContextPredictor
from iclab.algorithms.fitted import BoostedTreesPredictor, LassoPredictor, ReluNetworkFit
from iclab.tasks.base import TaskFamily
from iclab.utils.errors import ConfigError

BaselineFactory = Callable[[TaskFamily, int], InContextPredictor]
"""(the family, a seed) -> the predictor."""

FAMILY_BASELINES: Mapping[str, BaselineFactory] = MappingProxyType({
    "lasso": lambda task, seed: LassoPredictor(),
    "gradient-boosting": lambda task, seed: BoostedTreesPredictor(seed),
    "relu-network-fit": lambda task, seed: ReluNetworkFit(seed),
})
"""Name -> factory of every built-in family-specific baseline (``iclab.algorithms.fitted``).
A predictor may have ``max_prompts`` (an int, or None for no limit): the number of prompts
worth giving it in an evaluation that runs it on every prefix (the scikit-learn ones fit
each prompt alone)."""


def family_baselines(task: TaskFamily, seed: int) -> list[InContextPredictor]:
    """The predictors named by ``task.baselines`` (none when the family declares none)."""
    names = getattr(task, "baselines", ())
    unknown = [name for name in names if name not in FAMILY_BASELINES]
    if unknown:
        raise ConfigError(f"family {task.name!r} names unknown baselines {unknown}; "
                          f"known: {sorted(FAMILY_BASELINES)}")
    return [FAMILY_BASELINES[name](task, seed) for name in names]


def prompt_limit(predictor: InContextPredictor, available: int) -> int:
    """How many of ``available`` prompts to give ``predictor`` in an evaluation that runs it on
    every prefix: all of them, or its ``max_prompts`` where it declares fewer (the predictors
    that fit each prompt alone with scikit-learn)."""
    limit = getattr(predictor, "max_prompts", None)
    return available if limit is None else max(1, min(available, int(limit)))
