"""What an ``lsa-cot`` run on isotropic linear Gaussian prompts adds to result.json: its
weight-prediction error E ||w_K - w||^2, measured on fresh prompts with their w, beside the
exact error of optimal K-step GD and of the optimal one step (docs/theory.md section 21), the
step it learned read from its weights, and its verdict.

Keys: weight_error, weight_error_stderr (mean and standard error over the evaluation
prompts), weight_error_theory (the exact error of K-step GD at the optimal constant step
eta*_K; of one step for K = 0), weight_error_z ((measured - theory) / se),
weight_error_one_step (the exact one-step optimum, which no-CoT training reaches),
below_one_step_z ((one step - measured) / se), eta_theory (eta*_K), eta_w, eta_b, non_gd
(``LSACoT.learned_steps``; for K = 0 only eta_b acts) and weight_verdict ("at K-step GD"
when |z| <= 4, else "off K-step GD").
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from iclab.models.base import Model
from iclab.runs.outputs import RunOutput
from iclab.studies.cot.model import LSACoT
from iclab.studies.cot.weights_theory import optimal_constant_step
from iclab.tasks.base import TaskFamily
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.seeding import make_generator

if TYPE_CHECKING:
    from iclab.config.train import TrainConfig

VERDICT_Z = 4.0


def isotropic(task: TaskFamily) -> bool:
    """x ~ N(0, I) and w ~ N(0, I): the law the exact theory is for."""
    return isinstance(task, LinearGaussian) and task.task_pool is None \
        and task.cov_x_is_identity and bool(np.array_equal(task.sigma_w, np.eye(task.d)))


def weight_errors(model: LSACoT, d: int, n: int, sigma: float, prompts: int,
                  seed: int) -> torch.Tensor:
    """||w_K - w||^2 on ``prompts`` fresh prompts, each with its w (float64)."""
    generator = make_generator(seed, "cot-eval", 0, torch.device("cpu"))
    errors = []
    for start in range(0, prompts, 4096):
        size = min(4096, prompts - start)
        X = torch.randn(size, n, d, generator=generator)
        w = torch.randn(size, d, generator=generator)
        y = torch.einsum("bnd,bd->bn", X, w) + sigma * torch.randn(size, n, generator=generator)
        with torch.no_grad():
            estimate = model.estimates(X.to(model.pv.dtype), y.to(model.pv.dtype))[:, -1]
        errors.append((estimate.double().cpu() - w.double()).square().sum(-1))
    return torch.cat(errors)


def weight_summary(model: LSACoT, d: int, n: int, sigma: float, prompts: int,
                   seed: int) -> dict[str, Any]:
    """The result.json keys of the module docstring."""
    errors = weight_errors(model, d, n, sigma, prompts, seed)
    mean = float(errors.mean())
    se = float(errors.std() / math.sqrt(errors.numel()))
    steps = max(model.steps, 1)
    eta, theory = optimal_constant_step(steps, n, d, sigma)
    _, one_step = optimal_constant_step(1, n, d, sigma)
    z = (mean - theory) / se if se > 0 else 0.0
    learned = model.learned_steps()
    verdict = f"at {steps}-step GD" if abs(z) <= VERDICT_Z else f"off {steps}-step GD"
    rows = [["weight error E||w_K - w||^2", f"{mean:.5f} ± {se:.5f} (K = {model.steps})"],
            [f"exact {steps}-step GD at eta* = {eta:.5f}", f"{theory:.5f} ({z:+.1f} se)"],
            ["exact one-step GD optimum", f"{one_step:.5f}"],
            ["learned step eta_w, eta_b", f"{learned['eta_w']:.5f}, {learned['eta_b']:.5f}"],
            ["weight verdict", f"{verdict} (|z| <= {VERDICT_Z:g}; the verdict below is the "
                               f"label loss's, against the one-layer LSA)"]]
    return {"weight_rows": rows, "cot_steps": model.steps, "weight_error": mean,
            "weight_error_stderr": se,
            "weight_error_theory": theory, "weight_error_z": z,
            "weight_error_one_step": one_step,
            "below_one_step_z": (one_step - mean) / se if se > 0 else 0.0,
            "eta_theory": eta, **learned,
            "weight_verdict": verdict}


class WeightErrorOutput(RunOutput):
    """The weight-prediction keys of every lsa-cot run on isotropic linear Gaussian prompts."""

    name = "weight prediction"

    def applies(self, model: Model, task: TaskFamily) -> bool:
        return isinstance(model, LSACoT) and isotropic(task)

    def write(self, model: Model, task: TaskFamily, config: TrainConfig,
              path: Path) -> dict[str, Any]:
        assert isinstance(model, LSACoT)
        return weight_summary(model, task.d, task.n, float(task.sigma),
                              config.run.eval_prompts, config.run.seed)
