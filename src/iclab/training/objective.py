"""The per-step training loss: a fresh batch from (seed, step), then mean squared error.

Which path a step takes is asked of the family and the model, never assumed: sufficient
statistics (``family.statistics`` and ``model.has_statistics``), whole prompts (every model;
a model with ``has_prefix_predictions`` is scored on the mean over every prefix of the
prompt with its query, k = 0..n examples before the prediction, and one with
``has_prompt_loss`` on its own ``prompt_loss``),
or the exact population loss (``family.gaussian`` and ``model.has_exact_loss``).

An objective returns either a differentiable loss, which the step backpropagates, or, where
the model works its gradients out itself (``Model.statistics_loss_and_gradients``), a detached
loss after adding those gradients to the parameters' ``.grad`` as a backward would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from iclab.config.curriculum import Curriculum, curriculum_prompts
from iclab.models.base import Model
from iclab.tasks.base import TaskFamily
from iclab.utils.batches import STATISTICS_SAMPLERS, Prompts, shared_statistics_kind
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

Objective = Callable[[int], torch.Tensor]
"""step -> scalar loss on that step's fresh batch."""


def loss_on_statistics(model: Model, stats: Any) -> torch.Tensor:
    """The training loss of ``model`` on one batch of statistics: with the model's own
    gradients (``statistics_loss_and_gradients``) added to its parameters' ``.grad`` and the
    loss detached, where it has them and gradients are being recorded; else the differentiable
    ``statistics_loss``."""
    if torch.is_grad_enabled():
        direct = model.statistics_loss_and_gradients(stats)
        if direct is not None:
            loss, grads = direct
            for param, grad in grads:
                if param.requires_grad:
                    param.grad = grad if param.grad is None else param.grad + grad
            return loss
    return model.statistics_loss(stats)


def make_objective(
    task: TaskFamily,
    model: Model,
    sampler: str,
    batch: int,
    seed: int,
    device: torch.device,
    pretrain_prompts: int | None = None,
    curriculum: Curriculum | None = None,
) -> Objective:
    """The loss of ``model`` at step s: on a fresh batch drawn with the "statistics" or "prompts"
    sampler, or, with "exact", the exact population loss (no sampling; ``batch`` is unused).
    ``pretrain_prompts`` = P (prompts sampler): a fixed set of P prompts drawn once from the
    "pretrain" stream; each step takes ``batch`` of them without replacement (all of them when
    batch >= P). With a ``curriculum`` (prompts only, not with a fixed set), step s's prompts
    have its effective d and n (``iclab.config.curriculum``)."""
    if sampler == "statistics":
        kind = shared_statistics_kind(task, model)
        if kind is None:
            raise ConfigError(f"the statistics sampler needs a family and a model that support "
                              f"it; got {task.name!r} and {model.name!r}")
        sample_statistics: Any = getattr(task, STATISTICS_SAMPLERS[kind])

        def statistics_loss(step: int) -> torch.Tensor:
            stats = sample_statistics(batch, make_generator(seed, "train", step, device))
            return loss_on_statistics(model, stats)

        return statistics_loss
    if sampler == "prompts":
        fixed = None if pretrain_prompts is None else task.sample_prompts(
            pretrain_prompts, make_generator(seed, "pretrain", 0, device))

        def prompts_loss(step: int) -> torch.Tensor:
            generator = make_generator(seed, "train", step, device)
            if fixed is not None:
                prompts = _subset(fixed, batch, generator)
            elif curriculum is not None:
                prompts = curriculum_prompts(task, *curriculum.at(step), batch, generator)
            else:
                prompts = task.sample_prompts(batch, generator)
            if model.has_prompt_loss:  # the model's own loss (lsa-cot's chain of thought)
                return model.prompt_loss(prompts)
            if model.has_prefix_predictions:  # every prefix: y_i from examples < i and x_i
                X = torch.cat([prompts.X, prompts.x_q[:, None]], dim=1)     # (B, n+1, d)
                y = torch.cat([prompts.y, prompts.y_q[:, None]], dim=1)     # (B, n+1)
                return (model.predict_prefixes(X, y) - y).square().mean()
            yhat: torch.Tensor = model(prompts.X, prompts.y, prompts.x_q)
            return (yhat - prompts.y_q).square().mean()

        return prompts_loss
    if sampler == "exact":
        if not (task.gaussian and model.has_exact_loss):
            raise ConfigError(f"exact training needs a Gaussian family and a model with an "
                              f"exact loss; got {task.name!r} and {model.name!r}")

        def exact_loss(step: int) -> torch.Tensor:
            return model.exact_loss(task)

        return exact_loss
    raise ConfigError(f"unknown sampler {sampler!r}; allowed: statistics, prompts, exact")


def _subset(prompts: Prompts, batch: int, generator: torch.Generator) -> Prompts:
    """``batch`` of ``prompts`` drawn without replacement (all of them when there are no more)."""
    total = prompts.X.shape[0]
    if batch >= total:
        return prompts
    index = torch.randperm(total, generator=generator, device=generator.device)[:batch]
    return Prompts(X=prompts.X[index], y=prompts.y[index], x_q=prompts.x_q[index],
                   y_q=prompts.y_q[index])
