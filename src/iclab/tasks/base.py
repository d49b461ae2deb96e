"""The task-distribution interface shared by every family."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from iclab.utils.batches import Prompts
from iclab.utils.errors import ConfigError

__all__ = ["Prompts", "TaskFamily", "check_family", "check_scalars", "nuisance_free_optimum"]


def check_scalars(d: int, n: int, sigma: float) -> None:
    """Raise ConfigError naming d, n or sigma when it is not allowed."""
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ConfigError(f"d must be an integer >= 1, got {d!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"n must be an integer >= 1, got {n!r}")
    if isinstance(sigma, bool) or not isinstance(sigma, int | float) or not math.isfinite(sigma) \
            or sigma < 0:
        raise ConfigError(f"sigma must be a finite number >= 0, got {sigma!r}")


def check_batch(batch: object) -> None:
    """Raise ConfigError naming ``batch`` when it is not an integer >= 1."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ConfigError(f"batch must be an integer >= 1, got {batch!r}")


class TaskFamily:
    """A distribution over regression tasks and the prompts drawn from them: the base class
    of every family, built-in or a user's, as ``torch.distributions.Distribution`` is of
    every distribution.

    ``sample_prompts`` must draw only from ``generator``, so a batch is reproducible from the
    generator's seed alone. A family gives ``name``, ``d``, ``n`` and ``sigma`` (as dataclass
    fields, class attributes or properties; families are frozen dataclasses) and declares
    what else it can do; the rest of iclab asks these declarations, never the family's class
    nor whether an attribute exists. The defaults here are a family that can do none of it:

    - ``statistics`` (False): the family draws sufficient statistics instead of whole
      prompts, of the kinds listed in ``statistics_kinds`` (default ("bartlett",)) by the
      methods ``iclab.utils.batches.STATISTICS_SAMPLERS`` names (``sample_statistics``
      returns ``GaussianStatistics``, the n-independent sampler of linear Gaussian tasks);
    - ``gaussian`` (False): x ~ N(0, Sigma_x), f(x) = w^T x with w ~ N(0, Sigma_w); the
      family has ``sigma_x`` and ``sigma_w`` ((d, d) float64 arrays), so the closed-form
      optimum, the exact population loss and the Bayes risk apply;
    - ``rotation_invariant`` (False): x ~ N(0, I) and f o R has the law of f for every
      rotation R, so the optimum is one step of plain GD (docs/theory.md section 5);
    - ``sign_symmetric`` (False): the law is invariant under (f, noise) -> (-f, -noise), so
      the optimal one-layer LSA has no nuisance term (docs/theory.md section 3);
    - ``covariate_law`` (None): not None for a linear task whose covariates have another law
      or correlated positions; the family then also has ``sigma_x``, ``sigma_w``,
      ``correlated`` and ``position_covariance`` (the covariates study, docs/theory.md
      sections 11 and 12);
    - ``task_pool`` (None): a (K, d) float64 array when the task is drawn uniformly from K
      fixed tasks (the pool study, docs/theory.md section 15);
    - ``own_optimum(monte_carlo, seed)`` (None): the family's optimal one-layer LSA where its
      study computes it (the covariates study's laws);
    - ``own_evaluation(model, eval_prompts, seed)`` (None): result.json's numbers where the
      family's study evaluates a trained model (the pool study);
    - ``has_draw_values`` (False): ``draw_values(inputs, generator)`` evaluates one freshly
      drawn f per row of any inputs (B, k, d) -> (B, k) (the curriculum and the Monte Carlo
      optimum use it);
    - ``gd_moments()`` (None): (G, A, B) of docs/theory.md section 5 in closed form, for a
      rotation-invariant family that knows them;
    - ``baselines`` (()): factories (family, seed) -> ``InContextPredictor`` of the family's
      own baselines (``iclab.studies.transformer.family_baselines``);
    - ``probe(seed)`` (nothing): a check the family runs on itself before any work (a user
      family's draw function), raising ConfigError with one line.
    """

    if TYPE_CHECKING:  # read-only: a family may give them as fields or as properties
        @property
        def name(self) -> str: ...

        @property
        def d(self) -> int: ...

        @property
        def n(self) -> int: ...

        @property
        def sigma(self) -> float: ...

        @property
        def rotation_invariant(self) -> bool: ...

        @property
        def covariate_law(self) -> Any: ...

        @property
        def task_pool(self) -> np.ndarray | None: ...
    else:
        rotation_invariant = False
        covariate_law = None
        task_pool = None

    statistics: bool = False
    statistics_kinds: tuple[str, ...] = ("bartlett",)
    gaussian: bool = False
    sign_symmetric: bool = False
    has_draw_values: bool = False
    baselines: tuple[Callable[..., Any], ...] = ()

    def sample_prompts(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
    ) -> Prompts:
        """Draw ``batch`` prompts: X (B, n, d), y (B, n), x_q (B, d), y_q (B,)."""
        raise NotImplementedError(f"family {type(self).__name__} does not define "
                                  f"sample_prompts()")

    def draw_values(self, inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """inputs: (B, k, d) -> the values of one freshly drawn f per row: (B, k)
        (``has_draw_values`` families)."""
        raise NotImplementedError(f"family {self.name} does not draw values on given inputs")

    def gd_moments(self) -> tuple[float, float, float] | None:
        """(G, A, B) = (E||g_f||^2, E f^2, E f^2 ||x||^2) in closed form where known, else None
        (docs/theory.md section 5)."""
        return None

    def probe(self, seed: int = 0) -> None:
        """Check the family on a few draws from ``seed`` before any work; nothing by default."""

    def own_optimum(self, monte_carlo: bool = False, seed: int = 0) -> Any:
        """The family's optimal one-layer LSA (an ``iclab.theory.optimum.FamilyOptimum``),
        where the family's study computes it (a covariate law's, correlated contexts'); None:
        the theory's closed forms or Monte Carlo apply."""
        return None

    def own_evaluation(self, model: Any, eval_prompts: int, seed: int) -> dict[str, Any] | None:
        """result.json's numbers of ``model`` trained on this family, where the family's study
        evaluates it (a task pool: pool and fresh tasks beside the pool's optimum); None: the
        core's evaluation applies."""
        return None


def check_family(family: object, name: str) -> TaskFamily:
    """``family`` if it is a ``TaskFamily``; ConfigError (one line) naming ``name`` otherwise."""
    if not isinstance(family, TaskFamily):
        raise ConfigError(f"family {name!r} must build an iclab.tasks.base.TaskFamily "
                          f"(subclass it), got {type(family).__name__}")
    return family


def nuisance_free_optimum(task: TaskFamily) -> bool:
    """Whether the optimal one-layer LSA of ``task`` provably has no nuisance term
    (u_x = 0, m_y = 0): true for sign-symmetric and for rotation-invariant families."""
    return bool(task.sign_symmetric or task.rotation_invariant)
