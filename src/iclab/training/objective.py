"""The per-step training loss: a fresh batch from (seed, step), then mean squared error."""

from __future__ import annotations

from collections.abc import Callable

import torch

from iclab.models.lsa import LinearSelfAttention
from iclab.seeding import make_generator
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.tasks.registry import Family
from iclab.theory.population import PopulationLoss

Objective = Callable[[int], torch.Tensor]
"""step -> scalar loss on that step's fresh batch."""


def make_objective(
    task: Family,
    model: LinearSelfAttention,
    sampler: str,
    batch: int,
    seed: int,
    device: torch.device,
) -> Objective:
    """The loss of ``model`` at step s: on a fresh batch drawn with the "statistics" or "prompts"
    sampler, or, with "exact", the exact population loss (no sampling; ``batch`` is unused)."""
    if sampler == "statistics":
        if not isinstance(task, LinearGaussian):
            raise ValueError("the statistics sampler needs a linear Gaussian task")
        gaussian = task

        def statistics_loss(step: int) -> torch.Tensor:
            stats = gaussian.sample_statistics(batch, make_generator(seed, "train", step, device))
            return (model.forward_statistics(stats) - stats.y_q).square().mean()

        return statistics_loss
    if sampler == "prompts":

        def prompts_loss(step: int) -> torch.Tensor:
            prompts = task.sample_prompts(batch, make_generator(seed, "train", step, device))
            yhat: torch.Tensor = model(prompts.X, prompts.y, prompts.x_q)
            return (yhat - prompts.y_q).square().mean()

        return prompts_loss
    if sampler == "exact":
        if not isinstance(task, LinearGaussian):
            raise ValueError("exact training needs a linear Gaussian task")
        population = PopulationLoss.from_task(task, device)
        options = model.options

        def exact_loss(step: int) -> torch.Tensor:
            u, M = model.effective()
            return population(u, M, options.normalise, options.attend_query)

        return exact_loss
    raise ValueError(f"unknown sampler {sampler!r}; allowed: statistics, prompts, exact")
