"""What a claim kind needs of the runs of its group, declared by the kind and checked when the
spec is loaded, before any run.

A ``Need`` names, in words, one thing every run of a claim's group must be (a model with a
linear read-out, a task pool, sigma > 0, ...) and decides it from the run's config and its
task family, as a model declares ``has_readout``: the spec loader asks
``ClaimKind.unmet(spec, config, task)``, which by default returns the first of the kind's
``requires`` that a run does not meet; a kind whose needs depend on its options adds those in
its own ``unmet``. A claim on a group it cannot judge is then one line naming the claim, the
group and what is missing, before any run folder exists, instead of an error after every run
of the sweep is trained.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from iclab.config.task_section import option_values
from iclab.config.train import TrainConfig
from iclab.tasks.base import TaskFamily


@dataclass(frozen=True)
class Need:
    """One thing a claim needs of a run: ``what`` (words completing "needs ...") and ``met``
    (whether the run of the config, with its built task family, has it)."""

    what: str
    met: Callable[[TrainConfig, TaskFamily], bool]


def first_unmet(needs: Sequence[Need], config: TrainConfig, task: TaskFamily) -> str | None:
    """The words of the first of ``needs`` the run does not meet, or None."""
    return next((need.what for need in needs if not need.met(config, task)), None)


def _identity(matrix: list[list[float]] | None, multiple: bool = False) -> bool:
    """Whether ``matrix`` is I (None) or, with ``multiple``, s I."""
    if matrix is None:
        return True
    array = np.asarray(matrix, dtype=np.float64)
    scale = float(array[0, 0]) if multiple else 1.0
    return bool(np.array_equal(array, scale * np.eye(len(array))))


def _pooled(config: TrainConfig) -> bool:
    values = option_values(config.task)
    return values.get("tasks") is not None or values.get("task_pool") is not None


def _option(config: TrainConfig, name: str) -> object:
    """The model option ``name`` of an lsa run (None for another model)."""
    return getattr(config.model, name) if config.model_name == "lsa" else None


READOUT = Need("a model with a linear read-out (model lsa: its Gamma and eta_hat)",
               lambda config, task: config.built_class().has_readout)
PREFIX_MODEL = Need("a model with prefix predictions (model transformer: its prefix.json)",
                    lambda config, task: config.built_class().has_prefix_predictions)
GAUSSIAN = Need("a linear Gaussian family (linear-gaussian or anisotropic, Gaussian x_law, "
                "independent contexts, fresh tasks, no pool)",
                lambda config, task: bool(task.gaussian))
ISOTROPIC = Need("Sigma_x = Sigma_w = I (the theory compared is the isotropic one)",
                 lambda config, task: _identity(option_values(config.task).get("cov_x"))
                 and _identity(option_values(config.task).get("cov_w")))
POOL = Need("a task pool (tasks or task_pool)", lambda config, task: _pooled(config))
NOISE = Need("sigma > 0 (a positive Bayes loss to divide by)",
             lambda config, task: config.task.sigma > 0)
N_AT_LEAST_2D = Need("n >= 2d (its comparisons start at k = 2d)",
                     lambda config, task: config.task.n >= 2 * config.task.d)
CORRELATED = Need("context_correlation set (AR(1) correlated contexts)",
                  lambda config, task: option_values(config.task).get("context_correlation")
                  is not None)
DEEP = Need("an L-layer lsa (layers > 1, parameterisation sparse or looped)",
            lambda config, task: config.depth() is not None)
SPARSE = Need("an L-layer lsa with parameterisation sparse (its learned per-layer steps)",
              lambda config, task: config.depth() is not None
              and _option(config, "parameterisation") == "sparse")
MULTI_HEAD = Need("the multi-head lsa model (heads H and/or kq separate)",
                  lambda config, task: bool(_option(config, "multi_head")))
PLAIN_SGD = Need("optimizer sgd without momentum (the flow is plain SGD's limit)",
                 lambda config, task: config.optim.optimizer == "sgd"
                 and not config.optim.momentum)
MERGED = Need("kq merged (one d x d matrix per head)",
              lambda config, task: _option(config, "kq") == "merged")
WHITE = Need("Sigma_x and Sigma_w multiples of I and normalise off (the analytic drop time "
             "applies there only)",
             lambda config, task: _identity(option_values(config.task).get("cov_x"), multiple=True)
             and _identity(option_values(config.task).get("cov_w"), multiple=True)
             and not _option(config, "normalise"))
