"""The ``drifting-linear`` family: a linear task that drifts along the prompt.

x_1..x_n, x_q ~ N(0, I_d) independent; w_1 ~ N(0, I_d) and w_(i+1) = rho w_i +
sqrt(1 - rho^2) xi_i with xi_i ~ N(0, I_d), so every w_i ~ N(0, I_d) and
E[w_i w_j^T] = rho^|i-j| I; y_i = x_i^T w_i + sigma eps_i and the query is labelled by the
next task, y_q = x_q^T w_(n+1) + sigma eps_q. rho = 1 is the i.i.d. ``linear-gaussian``
family (one w per prompt); rho = 0 draws a fresh task for every example.

Recent examples carry more of w_(n+1) than old ones, so weighting the examples pays: the
family's optimum among one-step estimators is weighted preconditioned GD (``wpgd``), its
Bayes predictor a Kalman filter (``kalman``). Declared (``iclab.tasks.base.TaskFamily``):
sign symmetric (w -> -w), rotation invariant (Gaussian x with identity covariance, and the
task's law is invariant under a rotation of every w_i), no sufficient statistics, not
``gaussian`` in the core's sense (there is no single w), and its own optimum: the optimal
one-layer LSA is WPGD with uniform weights, in closed form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from iclab.studies.sequence.kalman import KalmanPredictor, bayes_risk
from iclab.studies.sequence.wpgd import check_rho, wpgd_optimum
from iclab.tasks.base import TaskFamily, check_scalars
from iclab.theory.optimum import FamilyOptimum
from iclab.utils.batches import Prompts
from iclab.utils.fields import setting

BAYES_DRAWS = 20_000
"""Input draws of the Monte Carlo Bayes risk an optimum reports."""


@dataclass(frozen=True)
class DriftingOptions:
    """The options of ``drifting-linear``."""

    rho: float = setting(0.9, "Task persistence along the prompt: w_(i+1) = rho w_i + "
                         "sqrt(1 - rho^2) xi_i (drifting-linear; 1: one task per prompt).",
                         minimum=0, maximum=1)


def _kalman_baseline(task: Any, seed: int) -> KalmanPredictor:
    return KalmanPredictor(task.sigma, task.rho)


@dataclass(frozen=True)
class DriftingLinear(TaskFamily):
    """The drifting linear family of dimension d, n examples, noise sigma and persistence rho
    in [0, 1] (module docstring)."""

    d: int
    n: int
    sigma: float
    rho: float = 0.9
    name = "drifting-linear"
    sign_symmetric = True
    rotation_invariant = True
    baselines = (_kalman_baseline,)

    def __post_init__(self) -> None:
        check_scalars(self.d, self.n, self.sigma)
        object.__setattr__(self, "rho", check_rho(self.rho))

    def sample_prompts(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
    ) -> Prompts:
        """Inputs (B, n+1, d), then w_1 and the innovations xi_1..xi_n, then the noise."""
        device = generator.device
        d, n = self.d, self.n
        inputs = torch.randn(batch, n + 1, d, generator=generator, dtype=dtype, device=device)
        draws = torch.randn(batch, n + 1, d, generator=generator, dtype=dtype, device=device)
        # w_k = rho^(k-1) w_1 + sqrt(1 - rho^2) sum_(j<k) rho^(k-1-j) xi_j as one product
        position = torch.arange(n + 1, device=device)
        lag = (position[:, None] - position[None, :]).to(dtype)
        mix = torch.where(lag >= 0, torch.as_tensor(self.rho, dtype=dtype).pow(lag.clamp_min(0)),
                          torch.zeros((), dtype=dtype))
        mix[:, 1:] *= math.sqrt(1 - self.rho**2)
        tasks = torch.einsum("kj,bjd->bkd", mix.to(device), draws)           # (B, n+1, d)
        labels = (inputs * tasks).sum(-1)                                    # (B, n+1)
        if self.sigma > 0:
            noise = torch.randn(batch, n + 1, generator=generator, dtype=dtype, device=device)
            labels = labels + self.sigma * noise
        return Prompts(X=inputs[:, :n], y=labels[:, :n], x_q=inputs[:, n], y_q=labels[:, n])

    def own_optimum(self, monte_carlo: bool = False, seed: int = 0) -> FamilyOptimum:
        """The optimal one-layer LSA (WPGD with uniform weights, closed form) and the Bayes
        risk of the Kalman filter (Monte Carlo over the inputs)."""
        optimum = wpgd_optimum(self.d, self.n, self.sigma, self.rho)
        bayes, stderr = bayes_risk(self.d, self.n, self.sigma, self.rho, BAYES_DRAWS, seed)
        return FamilyOptimum(gamma=optimum.lsa_eta * np.eye(self.d), eta=optimum.lsa_eta,
                             loss=optimum.lsa_loss, isotropic=True, method="closed-form",
                             bayes_loss=bayes, bayes_loss_stderr=stderr)


def drifting_family(d: int, n: int, sigma: float, options: DriftingOptions) -> DriftingLinear:
    """The ``FamilyEntry`` builder."""
    return DriftingLinear(d, n, sigma, options.rho)


def drift_of(task: TaskFamily) -> float | None:
    """rho of a drifting family, 1 for the isotropic i.i.d. linear Gaussian family, else
    None (the theory does not apply)."""
    if isinstance(task, DriftingLinear):
        return task.rho
    if task.gaussian and task.rotation_invariant and task.covariate_law is None \
            and task.task_pool is None:
        gaussian: Any = task  # a gaussian family has sigma_x and sigma_w (TaskFamily)
        identity = np.eye(task.d)
        if np.array_equal(gaussian.sigma_x, identity) \
                and np.array_equal(gaussian.sigma_w, identity):
            return 1.0
    return None
