"""Garg et al.'s curriculum: at step t the training prompts have exactly the scheduled
effective d (zeros beyond) and n, f evaluated on those inputs; validation of its options."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclab.config.curriculum import Curriculum, curriculum_prompts
from iclab.config.train import TrainConfig
from iclab.tasks.registry import FamilyRegistry
from iclab.training.objective import make_objective
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

pytestmark = pytest.mark.usefixtures("one_thread")


class Recorder(torch.nn.Module):
    """Stands in for a model: records every prompt it reads, predicts 0."""

    has_prefix_predictions = False
    has_prompt_loss = False

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
        self.zero = torch.nn.Parameter(torch.zeros(()))

    def forward(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        self.seen.append((X, y, x_q))
        return self.zero.expand(X.shape[0])


def test_schedule() -> None:
    schedule = Curriculum(d=10, n=20, d_start=3, n_start=5, every=4, d_increment=2,
                          n_increment=3)
    expected = {0: (3, 5), 3: (3, 5), 4: (5, 8), 11: (7, 11), 12: (9, 14), 16: (10, 17),
                20: (10, 20), 1000: (10, 20)}
    assert {t: schedule.at(t) for t in expected} == expected


@pytest.mark.parametrize("family", ["sparse-linear", "relu-network", "linear-gaussian"])
def test_prompts_at_each_step_have_the_scheduled_d_and_n(family: str) -> None:
    config = TrainConfig.flat(d=6, n=10, sigma=0.0, family=family, curriculum_every=2,
                              curriculum_d_start=2, curriculum_n_start=3,
                              curriculum_n_increment=3, batch=16).validate()
    assert config.resolved_sampler() == "prompts"
    task, recorder = config.make_task(), Recorder()
    schedule = config.curriculum()
    assert schedule is not None
    objective = make_objective(task, recorder, "prompts", 16, 0,  # type: ignore[arg-type]
                               torch.device("cpu"), curriculum=schedule)
    for step in range(12):
        objective(step)
        X, y, x_q = recorder.seen[-1]
        d_t = min(6, 2 + step // 2)
        n_t = min(10, 3 + 3 * (step // 2))
        assert X.shape == (16, n_t, 6) and y.shape == (16, n_t) and x_q.shape == (16, 6)
        assert torch.all(X[..., d_t:] == 0) and torch.all(x_q[:, d_t:] == 0)
        assert torch.all(X[..., :d_t] != 0)
    if family != "relu-network":      # linear: the labels are a function of x_1..x_{d_t}
        X, y, _ = recorder.seen[-1]   # step 11: d_t = 6, n_t = 10
        for row in range(4):
            w, *_ = np.linalg.lstsq(X[row].double().numpy(), y[row].double().numpy(),
                                    rcond=None)
            assert np.allclose(X[row].double().numpy() @ w, y[row].double().numpy(),
                               atol=1e-4)


def test_tree_labels_on_zeroed_coordinates_follow_the_full_tree() -> None:
    # a zeroed coordinate x_j = 0 is not > 0: every test of it goes left, so f takes at most
    # the values of the leaves reachable by the live coordinates
    task = FamilyRegistry().make_family("decision-tree", 5, 40, 0.0, tree_depth=2)
    p = curriculum_prompts(task, 1, 40, 64, make_generator(0, "c"))
    distinct = [len(np.unique(row)) for row in p.y.numpy()]
    assert max(distinct) <= 4 and torch.all(p.X[..., 1:] == 0)


def test_curriculum_off_by_default_and_validated() -> None:
    assert TrainConfig.flat(d=4, n=8).curriculum() is None
    with pytest.raises(ConfigError, match="curriculum_d_start needs curriculum_every"):
        TrainConfig.flat(d=4, n=8, curriculum_d_start=2).validate()
    with pytest.raises(ConfigError, match="curriculum_n_start must be from 1 to 8"):
        TrainConfig.flat(d=4, n=8, curriculum_every=5, curriculum_n_start=9).validate()
    with pytest.raises(ConfigError, match="sampler 'statistics' does not apply"):
        TrainConfig.flat(d=4, n=8, curriculum_every=5, sampler="statistics").validate()
    with pytest.raises(ConfigError, match="needs a family drawn on its inputs"):
        TrainConfig.flat(d=4, n=8, curriculum_every=5, x_law="uniform").validate()


def test_a_fixed_pretraining_set_and_a_curriculum_do_not_combine() -> None:
    TrainConfig.flat(d=4, n=8, pretrain_prompts=64).validate()
    TrainConfig.flat(d=4, n=8, curriculum_every=5, curriculum_d_start=2).validate()
    with pytest.raises(ConfigError, match="curriculum and pretrain_prompts do not combine"):
        TrainConfig.flat(d=4, n=8, curriculum_every=5, curriculum_d_start=2,
                         pretrain_prompts=64).validate()
