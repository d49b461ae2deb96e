"""Task pools: their checks (hypothesis), their seeded draw, and the pooled family's law."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclab.config.train import TrainConfig
from iclab.studies.pool.family import with_pool
from iclab.studies.pool.pool import check_pool, draw_pool
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.errors import ConfigError


@settings(max_examples=40, deadline=None)
@given(d=st.integers(1, 6), rows=st.integers(0, 5), width=st.integers(0, 8),
       bad=st.sampled_from(["width", "nan", "inf", "1d", "3d", "empty"]))
def test_bad_pools_are_refused_in_one_line(d: int, rows: int, width: int, bad: str) -> None:
    pool = np.ones((max(rows, 1), d))
    if bad == "width":
        pool = np.ones((max(rows, 1), width if width != d else d + 1))
    elif bad in ("nan", "inf"):
        pool[0, 0] = np.nan if bad == "nan" else np.inf
    elif bad == "1d":
        pool = np.ones(d)
    elif bad == "3d":
        pool = np.ones((1, max(rows, 1), d))
    else:
        pool = np.ones((0, d))
    with pytest.raises(ConfigError) as error:
        check_pool(pool, d)
    assert "\n" not in str(error.value) and "task_pool" in str(error.value)


def test_draw_is_seeded_and_follows_the_prior() -> None:
    sigma_w = np.array([[2.0, 0.5], [0.5, 1.0]])
    first, again = draw_pool(40_000, sigma_w, 3), draw_pool(40_000, sigma_w, 3)
    assert np.array_equal(first, again) and not np.array_equal(first, draw_pool(5, sigma_w, 4))
    np.testing.assert_allclose(np.cov(first.T), sigma_w, atol=0.05)


def test_prompts_take_their_tasks_from_the_pool() -> None:
    pool = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, 1.0]])
    family = with_pool(LinearGaussian(3, 6, 0.0), None, pool, 0)
    prompts = family.sample_prompts(500, torch.Generator().manual_seed(1), torch.float64)
    w = torch.linalg.lstsq(prompts.X, prompts.y[..., None]).solution[..., 0].numpy()
    distance = np.abs(w[:, None, :] - pool[None]).max(-1).min(-1)
    assert distance.max() < 1e-8
    chosen = np.abs(w[:, None, :] - pool[None]).max(-1).argmin(-1)
    assert 0.4 < chosen.mean() < 0.6                      # both tasks, about equally often
    stats = family.sample_statistics(500, torch.Generator().manual_seed(2), torch.float64)
    assert {tuple(row) for row in stats.w.numpy().round(12)} <= {tuple(r) for r in pool}
    residual = stats.y_q - (stats.w * stats.x_q).sum(-1)
    assert float(residual.abs().max()) < 1e-12            # sigma = 0


def test_config_draws_the_pool_from_its_seed() -> None:
    config = TrainConfig.flat(d=2, n=5, sigma=0.5, tasks=3, seed=7)
    task = config.make_task()
    assert np.array_equal(task.task_pool, draw_pool(3, np.eye(2), 7))
    assert not task.gaussian and not task.sign_symmetric
    pooled = TrainConfig.flat(d=2, n=5, task_pool=[[1.0, 2.0]])
    assert pooled.hash() != TrainConfig.flat(d=2, n=5, task_pool=[[1.0, 2.5]]).hash()
    with pytest.raises(ConfigError, match="not both"):
        TrainConfig.flat(d=2, n=5, tasks=2, task_pool=[[1.0, 2.0]]).validate()
    with pytest.raises(ConfigError, match="linear-gaussian"):
        TrainConfig.flat(d=2, n=5, tasks=2, family="relu").validate()
    with pytest.raises(ConfigError, match="one-layer"):
        TrainConfig.flat(d=2, n=5, tasks=2, layers=2).validate()
    with pytest.raises(ConfigError, match="prompts sampler"):
        TrainConfig.flat(d=2, n=5, pretrain_prompts=10, sampler="statistics").validate()
