"""``PooledLinearGaussian``: a linear Gaussian family whose task is drawn uniformly from a
fixed pool (Raventos et al. 2023), and ``with_pool``, which wraps a run's family in it.

x ~ N(0, Sigma_x), y = w^T x + sigma eps as in the prior family, but w is one of the pool's K
rows, each with probability 1/K. Both samplers of the prior family are kept (whole prompts
and the one-layer statistics, whose Bartlett reduction holds given any w); the family is not
``gaussian`` (its optimum is ``optimum``'s, not the closed form), not sign-symmetric
(a pool need not contain -w with w), so the one-layer LSA keeps its nuisance weights free.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from iclab.models.base import Model
from iclab.studies.pool.cost import check_pool_work
from iclab.studies.pool.evaluate import evaluate_pool
from iclab.studies.pool.optimum import DEFAULT_STARTS
from iclab.studies.pool.pool import check_pool, draw_pool
from iclab.tasks.base import TaskFamily
from iclab.utils.batches import GaussianStatistics, Prompts
from iclab.utils.errors import ConfigError


@dataclass(frozen=True)
class PooledLinearGaussian(TaskFamily):
    """The prior family ``prior`` (a linear Gaussian family: ``gaussian`` and no
    ``covariate_law``) with its task drawn from ``task_pool`` ((K, d) float64)."""

    prior: Any
    task_pool: np.ndarray
    statistics = True
    statistics_kinds = ("bartlett",)
    gaussian = False
    sign_symmetric = False
    rotation_invariant = False
    _chol_x: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "task_pool", check_pool(self.task_pool, self.prior.d))
        object.__setattr__(self, "_chol_x", np.linalg.cholesky(self.prior.sigma_x))

    @property
    def name(self) -> str:
        """The prior family's name, marked: "linear-gaussian (task pool)"."""
        return f"{self.prior.name} (task pool)"

    @property
    def d(self) -> int:
        return int(self.prior.d)

    @property
    def n(self) -> int:
        return int(self.prior.n)

    @property
    def sigma(self) -> float:
        return float(self.prior.sigma)

    @property
    def sigma_x(self) -> np.ndarray:
        """Sigma_x: (d, d) float64."""
        return np.asarray(self.prior.sigma_x, dtype=np.float64)

    def own_evaluation(self, model: Model, eval_prompts: int, seed: int) -> dict[str, Any]:
        """result.json's numbers of a model trained on this pool, which the evaluation asks
        of the family: the pool's and fresh tasks' losses beside the pool's exact optimum
        (``evaluate``, docs/theory.md section 15)."""
        return evaluate_pool(model, self, eval_prompts, seed)

    def _tasks(self, batch: int, generator: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
        """``batch`` rows of the pool, each uniform: (B, d)."""
        pool = torch.as_tensor(self.task_pool, dtype=dtype, device=generator.device)
        index = torch.randint(len(self.task_pool), (batch,), generator=generator,
                              device=generator.device)
        return pool[index]

    def sample_prompts(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
    ) -> Prompts:
        """Whole prompts: X (B, n, d), y (B, n), x_q (B, d), y_q (B,)."""
        d, n, device = self.d, self.n, generator.device
        raw = torch.randn(batch, n + 1, d + 1, generator=generator, dtype=dtype, device=device)
        w = self._tasks(batch, generator, dtype)
        inputs = raw[..., :d] @ torch.as_tensor(self._chol_x, dtype=dtype, device=device).T
        labels = torch.einsum("bkd,bd->bk", inputs, w) + self.sigma * raw[..., d]
        return Prompts(X=inputs[:, :n].contiguous(), y=labels[:, :n].contiguous(),
                       x_q=inputs[:, n].contiguous(), y_q=labels[:, n].contiguous())

    def sample_statistics(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
    ) -> GaussianStatistics:
        """The one-layer statistics (``iclab.tasks.linear_gaussian``), w from the pool."""
        d, device = self.d, generator.device
        normals = torch.randn(d + 2, batch, generator=generator, dtype=dtype, device=device)
        w = self._tasks(batch, generator, dtype)                          # (B, d)
        chol_x = torch.as_tensor(self._chol_x, dtype=dtype, device=device)
        x_t = chol_x @ normals[:d]                                        # (d, B)
        y_q = (w.T * x_t).sum(0).add_(normals[d], alpha=self.sigma)
        shape = torch.full((batch,), self.n / 2, dtype=dtype, device=device)
        chi2 = torch._standard_gamma(shape, generator=generator).mul_(2)
        return GaussianStatistics(w=w, x_q=x_t.T, y_q=y_q, chi2=chi2, z=normals[d + 1],
                                  chol_x=chol_x, sigma=self.sigma, n=self.n)


def with_pool(family: Any, tasks: int | None, task_pool: Any, seed: int) -> Any:
    """``family`` itself when neither ``tasks`` nor ``task_pool`` is given; else the pooled
    family: a pool of ``tasks`` draws from the family's task law (``draw_pool``, from
    ``seed``), or the (K, d) ``task_pool``. ConfigError when both are given, the family is
    not linear Gaussian, or the pool optimum that ends the run would be over the search's work
    bound (``cost.check_pool_work``: about 10^4 tasks at d = 3), before anything is drawn."""
    if tasks is None and task_pool is None:
        return family
    if tasks is not None and task_pool is not None:
        raise ConfigError("give tasks (a pool drawn from the prior) or task_pool (a pool "
                          "file), not both")
    if not family.gaussian or family.covariate_law is not None:
        got = (f"family {family.name!r}" if family.covariate_law is None
               else "another covariate law or correlated contexts")
        raise ConfigError(f"tasks/task_pool apply only to --family linear-gaussian with "
                          f"Gaussian independent covariates, not {got}")
    if tasks is not None:  # the run ends with the pool optimum's search: bounded up front
        check_pool_work(tasks, family.d, DEFAULT_STARTS, "tasks")
        pool = draw_pool(tasks, family.sigma_w, seed)
    else:
        pool = check_pool(task_pool, family.d)
        check_pool_work(len(pool), family.d, DEFAULT_STARTS, "task_pool with K =")
    return PooledLinearGaussian(family, check_pool(pool, family.d))
