"""What ``iclab development`` measures at each checkpoint of a run on a task pool.

Two fixed sets of P prompts are drawn once from seeded streams: one from the pool (the
training law, ``development-pool``) and one from the task prior (fresh tasks,
``development-fresh``). On them the exact predictors are computed once, in float64:

- ``dmmse``: the pool's posterior mean (``iclab.studies.pool.dmmse``, Raventos et al. 2023);
- ``ridge``: the posterior mean under the prior w ~ N(0, Sigma_w), ridge with penalty
  sigma^2 Sigma_w^-1 (docs/theory.md section 7);
- ``ls``: minimum-norm least squares;
- ``gd1``, ``gdL``: one and L steps of GD from w = 0 with the steps that minimise the prior's
  population loss (``iclab.theory.depth.multistep``; L the model's layers, at least 2).

At each checkpoint: the model's test loss on either set (``test_loss_pool``,
``test_loss_fresh``), its mean squared distance from each predictor on the pool set
(``dist_NAME``) and on the fresh set (``dist_NAME_fresh``), each mean over prompts with its
standard error (``_stderr``), the paired difference ``ridge_minus_dmmse`` = dist_ridge -
dist_dmmse with the standard error of the per-prompt differences (the prompts are shared, so
it is smaller than the two errors combined), and the best mixture weight ``mix_dmmse`` in
[0, 1]: the alpha minimising the mean of (f - alpha dmmse - (1 - alpha) ridge)^2 on the pool
set.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, is_dataclass
from typing import Any

import torch

from iclab.algorithms.baselines import BayesPosteriorMean, KStepGD, LeastSquares
from iclab.studies.pool.dmmse import PoolPosteriorMean
from iclab.utils.batches import Prompts
from iclab.utils.fields import field_infos
from iclab.utils.seeding import make_generator

PREDICTORS = ("dmmse", "ridge", "ls", "gd1", "gdL")
MIN_LAYERS_GD = 2
MAX_LAYERS_GD = 8
CHUNK = 2048
"""Prompts per forward pass of a checkpoint."""


def mean_and_stderr(values: torch.Tensor) -> tuple[float, float]:
    """The mean of a float64 vector and its standard error (sample std / sqrt(count))."""
    count = values.numel()
    mean = float(values.mean())
    spread = float(values.std()) if count > 1 else 0.0
    return mean, spread / math.sqrt(count)


@dataclass(frozen=True)
class Reference:
    """One fixed prompt set with every exact predictor's predictions on it."""

    prompts: Prompts
    predictions: dict[str, torch.Tensor]


def gd_layers(model_options: Any) -> int:
    """L of the L-step GD compared with: the model's declared ``layers`` option (2 for a
    model without one), within [2, 8]."""
    declared = field_infos(type(model_options)) if is_dataclass(model_options) else {}
    layers = getattr(model_options, "layers") if "layers" in declared else None  # noqa: B009
    layers = layers if isinstance(layers, int) else MIN_LAYERS_GD
    return min(max(layers, MIN_LAYERS_GD), MAX_LAYERS_GD)


def exact_predictors(task: Any, layers: int) -> dict[str, Callable[..., torch.Tensor]]:
    """The five exact predictors of a pooled family ``task`` (module doc)."""
    prior = task.prior
    return {"dmmse": PoolPosteriorMean(task.task_pool, task.sigma),
            "ridge": BayesPosteriorMean(task.sigma, prior.sigma_w, task.d),
            "ls": LeastSquares(),
            "gd1": KStepGD.optimal(prior, 1),
            "gdL": KStepGD.optimal(prior, layers)}


def references(task: Any, prompts: int, seed: int, layers: int) -> dict[str, Reference]:
    """The pool and fresh prompt sets ("pool", "fresh") and the predictions on them."""
    predictors = exact_predictors(task, layers)
    sets = {"pool": task.sample_prompts(prompts, make_generator(seed, "development-pool"),
                                        torch.float64),
            "fresh": task.prior.sample_prompts(prompts, make_generator(seed,
                                                                       "development-fresh"),
                                               torch.float64)}
    out = {}
    with torch.no_grad():
        for name, batch in sets.items():
            out[name] = Reference(batch, {key: predictor(batch.X, batch.y, batch.x_q)
                                          for key, predictor in predictors.items()})
    return out


def model_predictions(model: Callable[..., torch.Tensor], prompts: Prompts) -> torch.Tensor:
    """The model's predictions at the queries, in chunks, float64."""
    parts = []
    with torch.no_grad():
        for start in range(0, prompts.X.shape[0], CHUNK):
            part = slice(start, start + CHUNK)
            parts.append(model(prompts.X[part], prompts.y[part], prompts.x_q[part]))
    return torch.cat(parts).to(torch.float64)


def best_mixture(f: torch.Tensor, dmmse: torch.Tensor, ridge: torch.Tensor) -> float:
    """The alpha in [0, 1] minimising mean (f - alpha dmmse - (1 - alpha) ridge)^2."""
    gap = dmmse - ridge
    scale = float(gap.square().sum())
    if scale == 0.0:
        return 0.5
    return min(1.0, max(0.0, float(((f - ridge) * gap).sum()) / scale))


def measure(model: Callable[..., torch.Tensor], refs: dict[str, Reference]) -> dict[str, Any]:
    """One checkpoint's row (without its step): the module doc's numbers."""
    row: dict[str, Any] = {}
    predicted = {name: model_predictions(model, ref.prompts) for name, ref in refs.items()}
    for name, ref in refs.items():
        f = predicted[name]
        loss, loss_se = mean_and_stderr((f - ref.prompts.y_q).square())
        row[f"test_loss_{name}"], row[f"test_loss_{name}_stderr"] = loss, loss_se
        suffix = "" if name == "pool" else "_fresh"
        for key in PREDICTORS:
            dist, dist_se = mean_and_stderr((f - ref.predictions[key]).square())
            row[f"dist_{key}{suffix}"], row[f"dist_{key}{suffix}_stderr"] = dist, dist_se
    pool = refs["pool"].predictions
    f = predicted["pool"]
    gap = (f - pool["ridge"]).square() - (f - pool["dmmse"]).square()
    row["ridge_minus_dmmse"], row["ridge_minus_dmmse_stderr"] = mean_and_stderr(gap)
    row["mix_dmmse"] = best_mixture(predicted["pool"], pool["dmmse"], pool["ridge"])
    return row


def predictor_losses(refs: dict[str, Reference]) -> dict[str, dict[str, float]]:
    """Each exact predictor's own loss on both sets, with standard errors (the floor the
    model's losses are read against)."""
    out: dict[str, dict[str, float]] = {}
    for key in PREDICTORS:
        entry: dict[str, float] = {}
        for name, ref in refs.items():
            mean, se = mean_and_stderr((ref.predictions[key] - ref.prompts.y_q).square())
            entry[f"loss_{name}"], entry[f"loss_{name}_stderr"] = mean, se
        out[key] = entry
    return out


def rows(models: Iterable[tuple[int, Callable[..., torch.Tensor]]],
         refs: dict[str, Reference]) -> list[dict[str, Any]]:
    """One row per (step, model)."""
    return [{"step": step, **measure(model, refs)} for step, model in models]
