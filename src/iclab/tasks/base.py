"""The task-distribution interface shared by every family."""

from __future__ import annotations

import math
from typing import Protocol

import torch

from iclab.utils.batches import Prompts
from iclab.utils.errors import ConfigError

__all__ = ["Prompts", "TaskFamily", "check_scalars", "nuisance_free_optimum"]


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


class TaskFamily(Protocol):
    """A distribution over regression tasks and the prompts drawn from them.

    ``sample_prompts`` must draw only from ``generator``, so a batch is reproducible from the
    generator's seed alone. The attributes are read-only, so frozen dataclasses satisfy it.

    Capabilities, declared by each family and asked by the rest of iclab (never inferred from
    the family's class):

    - ``statistics``: the family has ``sample_statistics(batch, generator, dtype)`` returning
      ``iclab.utils.batches.GaussianStatistics`` (the n-independent sampler of linear Gaussian
      tasks);
    - ``gaussian``: x ~ N(0, Sigma_x), f(x) = w^T x with w ~ N(0, Sigma_w); the family has
      ``sigma_x`` and ``sigma_w`` ((d, d) float64 arrays), so the closed-form optimum, the exact
      population loss and the Bayes risk apply;
    - ``rotation_invariant``: x ~ N(0, I) and f o R has the law of f for every rotation R, so
      the optimum is one step of plain GD (docs/theory.md section 5);
    - ``sign_symmetric``: the law is invariant under (f, noise) -> (-f, -noise), so the optimal
      one-layer LSA has no nuisance term (docs/theory.md section 3).

    Optional, asked with ``getattr``: ``covariate_law`` (not None for a linear task whose
    covariates have another law or correlated positions; the family then also has
    ``sigma_x``, ``sigma_w``, ``correlated`` and ``position_covariance``, and its optimum is
    ``iclab.studies.covariates.optimum``'s, docs/theory.md sections 11 and 12).
    """

    @property
    def name(self) -> str: ...

    @property
    def d(self) -> int: ...

    @property
    def n(self) -> int: ...

    @property
    def sigma(self) -> float: ...

    @property
    def statistics(self) -> bool: ...

    @property
    def gaussian(self) -> bool: ...

    @property
    def rotation_invariant(self) -> bool: ...

    @property
    def sign_symmetric(self) -> bool: ...

    def sample_prompts(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
    ) -> Prompts:
        """Draw ``batch`` prompts: X (B, n, d), y (B, n), x_q (B, d), y_q (B,)."""
        ...


def nuisance_free_optimum(task: TaskFamily) -> bool:
    """Whether the optimal one-layer LSA of ``task`` provably has no nuisance term
    (u_x = 0, m_y = 0): true for sign-symmetric and for rotation-invariant families."""
    return bool(task.sign_symmetric or task.rotation_invariant)
