"""The exact probe targets of each prompt, in float64, on one seeded set of prompts.

For a prompt (X, y, x_q) of a linear family (y = X w + sigma noise, x ~ N(0, Sigma_x),
w ~ N(0, Sigma_w): the family declares ``gaussian``), the targets are

- ``w``: the task's weights; ``w_ols``: minimum-norm least squares pinv(X) y;
- ``w_ridge``: (X^T X + lambda I)^(-1) X^T y, lambda = sigma^2 unless given (the posterior
  mean under a unit isotropic prior; at sigma = 0 and n >= d it is w_ols);
- ``gd1``, ``gd2``: the iterates of gradient descent on 1/2 ||y - X w||^2 from w_0 = 0 with
  the optimal one- and two-step sizes of the family (``KStepGD.optimal``; docs/theory.md
  sections 5 and 10): w_(t+1) = w_t + eta_t X^T (y - X w_t);
- each of those with ``_pred`` appended: its prediction x_q . w (``gd1_pred`` is what the
  optimal one-layer LSA computes);

and on every family ``xty`` = X^T y (d numbers) and ``xtx`` = X^T X (its d(d+1)/2 upper
triangle). A target the family cannot give (``w_ols`` on a nonlinear family) is one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from iclab.algorithms.baselines import KStepGD
from iclab.tasks.base import TaskFamily
from iclab.utils.batches import Prompts
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

LINEAR_TARGETS = ("w", "w_ols", "w_ridge", "gd1", "gd2")
"""Targets of a linear family's prompt (each also as ``<name>_pred``)."""
MOMENT_TARGETS = ("xty", "xtx")
"""Targets of any family's prompt."""
ALL_TARGETS = (*LINEAR_TARGETS, *(f"{name}_pred" for name in LINEAR_TARGETS),
               *MOMENT_TARGETS)
DEFAULT_TARGETS = ("w", "w_ols", "w_ridge", "gd1", "gd2", "xty", "xtx")


def linear_family(task: TaskFamily) -> bool:
    """Whether ``task`` is a linear Gaussian family whose w this module can draw: x ~ N(0,
    Sigma_x), w ~ N(0, Sigma_w), independent positions, no task pool."""
    return bool(task.gaussian) and task.covariate_law is None and task.task_pool is None


def check_targets(names: Sequence[str], task: TaskFamily) -> tuple[str, ...]:
    """``names`` if each is a target ``task`` can give; ConfigError (one line) otherwise."""
    if not names:
        raise ConfigError(f"give at least one target; allowed: {', '.join(ALL_TARGETS)}")
    for name in names:
        if name not in ALL_TARGETS:
            raise ConfigError(f"unknown target {name!r}; allowed: {', '.join(ALL_TARGETS)}")
        if name not in MOMENT_TARGETS and not linear_family(task):
            raise ConfigError(f"target {name!r} needs a linear Gaussian family (y = w^T x + "
                              f"noise); family {task.name!r} gives only "
                              f"{', '.join(MOMENT_TARGETS)}")
    if len(set(names)) != len(names):
        raise ConfigError(f"a target is named twice in {', '.join(names)}")
    return tuple(names)


@dataclass(frozen=True)
class ProbePrompts:
    """The prompts (float64) and each one's task weights (None for a nonlinear family)."""

    prompts: Prompts
    w: torch.Tensor | None


def draw_prompts(task: TaskFamily, count: int, seed: int) -> ProbePrompts:
    """``count`` prompts of ``task`` from ``make_generator(seed, "probe-prompts")``, in
    float64. A linear family's are drawn here from its Sigma_x, Sigma_w and sigma, keeping
    each prompt's w; any other family's by its own ``sample_prompts``."""
    generator = make_generator(seed, "probe-prompts")
    if not linear_family(task):
        return ProbePrompts(task.sample_prompts(count, generator, torch.float64), None)
    d, n = task.d, task.n
    gaussian: Any = task  # a gaussian family has sigma_x and sigma_w (TaskFamily's doc)
    chol_x = torch.as_tensor(np.linalg.cholesky(gaussian.sigma_x), dtype=torch.float64)
    chol_w = torch.as_tensor(np.linalg.cholesky(gaussian.sigma_w), dtype=torch.float64)
    inputs = torch.randn(count, n + 1, d, generator=generator, dtype=torch.float64) @ chol_x.T
    w = torch.randn(count, d, generator=generator, dtype=torch.float64) @ chol_w.T
    noise = torch.randn(count, n + 1, generator=generator, dtype=torch.float64)
    labels = torch.einsum("bkd,bd->bk", inputs, w) + task.sigma * noise
    prompts = Prompts(X=inputs[:, :n].contiguous(), y=labels[:, :n].contiguous(),
                      x_q=inputs[:, n].contiguous(), y_q=labels[:, n].contiguous())
    return ProbePrompts(prompts, w)


def gd_steps(task: TaskFamily) -> dict[str, tuple[float, ...]]:
    """The step sizes of ``gd1`` and ``gd2``: the family's optimal one- and two-step GD."""
    return {"gd1": KStepGD.optimal(task, 1).etas, "gd2": KStepGD.optimal(task, 2).etas}


def ridge_lambda(task: TaskFamily, given: float | None) -> float:
    """The ridge target's penalty: ``given`` (finite, >= 0) or sigma^2."""
    if given is None:
        return float(task.sigma) ** 2
    if not np.isfinite(given) or given < 0:
        raise ConfigError(f"ridge lambda must be a finite number >= 0, got {given!r}")
    return float(given)


def compute_targets(drawn: ProbePrompts, names: Sequence[str], task: TaskFamily,
                    lam: float) -> dict[str, np.ndarray]:
    """Each target of ``names`` on every prompt: (B, k) float64 arrays."""
    X, y, x_q = drawn.prompts.X, drawn.prompts.y, drawn.prompts.x_q
    weights: dict[str, torch.Tensor] = {}
    wanted = {name.removesuffix("_pred") for name in names}
    if "w" in wanted:
        assert drawn.w is not None
        weights["w"] = drawn.w
    if "w_ols" in wanted:
        weights["w_ols"] = (torch.linalg.pinv(X) @ y[..., None])[..., 0]
    if "w_ridge" in wanted:
        gram = X.transpose(1, 2) @ X + lam * torch.eye(task.d, dtype=X.dtype)
        weights["w_ridge"] = torch.linalg.solve(gram, torch.einsum("bnd,bn->bd", X, y))
    for name, etas in gd_steps(task).items() if wanted & {"gd1", "gd2"} else ():
        if name in wanted:
            weights[name] = KStepGD(list(etas)).fit(X, y)
    out: dict[str, torch.Tensor] = {}
    for name in names:
        if name == "xty":
            out[name] = torch.einsum("bnd,bn->bd", X, y)
        elif name == "xtx":
            rows, cols = torch.triu_indices(task.d, task.d)
            out[name] = (X.transpose(1, 2) @ X)[:, rows, cols]
        elif name.endswith("_pred"):
            out[name] = (weights[name.removesuffix("_pred")] * x_q).sum(-1, keepdim=True)
        else:
            out[name] = weights[name]
    return {name: value.numpy().astype(np.float64) for name, value in out.items()}
