"""A fixed pretraining set (``pretrain_prompts``): drawn once, every step's batch from it."""

from __future__ import annotations

import torch

from iclab.models.lsa.layer import LinearSelfAttention
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.training import objective as objective_module
from iclab.training.objective import make_objective
from iclab.utils.seeding import make_generator


def test_the_whole_set_every_step_when_the_batch_is_larger() -> None:
    task, model = LinearGaussian(2, 5, 0.5), LinearSelfAttention(2)
    loss = make_objective(task, model, "prompts", 64, 0, torch.device("cpu"), 16)
    with torch.no_grad():
        assert float(loss(0)) == float(loss(7))
        fresh = make_objective(task, model, "prompts", 64, 0, torch.device("cpu"))
        assert float(fresh(0)) != float(fresh(7))


def test_smaller_batches_are_rows_of_the_set() -> None:
    task = LinearGaussian(2, 5, 0.5)
    fixed = task.sample_prompts(16, make_generator(0, "pretrain", 0, "cpu"))
    batch = objective_module._subset(fixed, 5, make_generator(0, "train", 3))
    rows = {tuple(row.tolist()) for row in fixed.x_q}
    assert batch.X.shape == (5, 5, 2) and len({tuple(r.tolist()) for r in batch.x_q}) == 5
    assert {tuple(row.tolist()) for row in batch.x_q} <= rows
