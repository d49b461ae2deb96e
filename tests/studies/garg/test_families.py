"""Garg et al.'s families: each law checked against an independent computation (least squares
recovering the sparse w, the tree's piecewise-constant structure, Monte Carlo moments against
the closed forms of docs/theory.md section 5), seeding, and the options' validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclab.config.train import TrainConfig
from iclab.studies.garg.families import DecisionTreeTask, ReluNetworkTask, SparseLinearTask
from iclab.tasks.registry import FamilyRegistry
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

pytestmark = pytest.mark.usefixtures("one_thread")


def test_sparse_linear_labels_are_an_s_sparse_linear_function() -> None:
    d, n, s = 6, 12, 2
    task = SparseLinearTask(d, n, 0.0, s)
    p = task.sample_prompts(200, make_generator(0, "t"), torch.float64)
    X = np.concatenate([p.X.numpy(), p.x_q.numpy()[:, None]], 1)
    y = np.concatenate([p.y.numpy(), p.y_q.numpy()[:, None]], 1)
    supports = np.zeros(d)
    for row in range(X.shape[0]):
        w, *_ = np.linalg.lstsq(X[row], y[row], rcond=None)
        nonzero = np.abs(w) > 1e-9
        assert nonzero.sum() == s
        assert np.allclose(X[row] @ w, y[row], atol=1e-9)
        supports += nonzero
    # each coordinate in the support with probability s/d = 1/3: 200 rows, sd ~ 6.7
    assert np.all(np.abs(supports - 200 * s / d) < 4 * math.sqrt(200 * (s / d) * (1 - s / d)))


def test_sparse_linear_moments_and_default() -> None:
    task = SparseLinearTask(8, 4, 0.0)
    assert task.sparsity == 3 and SparseLinearTask(2, 4, 0.0).sparsity == 2
    p = task.sample_prompts(20_000, make_generator(1, "t"), torch.float64)
    # E y^2 = E sum_{j in S} w_j^2 x_j^2 = s; Var(y^2) = E y^4 - s^2 with E y^4 = 3 E||w||^4
    # = 3 (s^2 + 2s): the standard error of the mean of 20000 y_q^2 is about 0.04
    assert abs(float(p.y_q.square().mean()) - 3.0) < 4 * math.sqrt((3 * 15 - 9) / 20_000)


def test_decision_tree_of_depth_one_splits_one_coordinate_at_zero() -> None:
    task = DecisionTreeTask(3, 30, 0.0, tree_depth=1)
    p = task.sample_prompts(50, make_generator(2, "t"), torch.float64)
    for row in range(50):
        x, y = p.X[row].numpy(), p.y[row].numpy()
        def constant(values: np.ndarray) -> bool:
            return len(np.unique(values)) <= 1

        splits = [j for j in range(3)
                  if constant(y[x[:, j] > 0]) and constant(y[x[:, j] <= 0])]
        assert splits, "no coordinate j makes f constant on both sides of x_j = 0"


def test_decision_tree_values_and_moments() -> None:
    task = DecisionTreeTask(5, 40, 0.0)
    p = task.sample_prompts(4000, make_generator(3, "t"), torch.float64)
    distinct = [len(np.unique(row)) for row in p.y.numpy()]
    assert max(distinct) <= 16 and np.mean(distinct) > 4
    # f(x) is one N(0, 1) leaf value: E f^2 = 1 (4 standard errors of the mean of chi2_1)
    assert abs(float(p.y_q.square().mean()) - 1.0) < 4 * math.sqrt(2 / 4000)
    assert abs(float(p.y_q.mean())) < 4 / math.sqrt(4000)


def test_relu_network_moments_match_gd_moments() -> None:
    d, batch = 4, 20_000
    task = ReluNetworkTask(d, 1, 0.0, network_width=30)
    G, A, B = task.gd_moments()
    generator = make_generator(4, "t")
    inputs = torch.randn(batch, 2, d, generator=generator, dtype=torch.float64)
    values = task.draw_values(inputs, generator)            # two inputs per network
    f, x = values[:, 0], inputs[:, 0]
    assert abs(float(f.square().mean()) / A - 1) < 0.06
    assert abs(float((f.square() * x.square().sum(1)).mean()) / B - 1) < 0.1
    # ||g_f||^2 unbiased from two independent inputs: f(x1) f(x2) x1.x2
    u = values[:, 0] * values[:, 1] * (inputs[:, 0] * inputs[:, 1]).sum(1)
    assert abs(float(u.mean()) / G - 1) < 4 * float(u.std()) / math.sqrt(batch) / G + 0.01


def test_same_seed_same_prompts_and_capabilities() -> None:
    for task in (SparseLinearTask(4, 5, 0.1), DecisionTreeTask(4, 5, 0.1),
                 ReluNetworkTask(4, 5, 0.1)):
        a = task.sample_prompts(8, make_generator(5, "t"))
        b = task.sample_prompts(8, make_generator(5, "t"))
        c = task.sample_prompts(8, make_generator(6, "t"))
        assert torch.equal(a.y, b.y) and torch.equal(a.X, b.X) and not torch.equal(a.y, c.y)
        assert a.X.shape == (8, 5, 4) and a.y_q.shape == (8,)
        assert task.gaussian is False and task.statistics is False and task.sign_symmetric


@pytest.mark.parametrize(("family", "option", "value", "message"), [
    ("sparse-linear", "sparsity", 5, "sparsity must be an integer >= 1 and <= 4"),
    ("decision-tree", "tree_depth", 0, "tree_depth must be an integer >= 1 and <= 16"),
    ("relu-network", "network_width", 0, "network_width must be an integer >= 1 and <= 100000"),
    ("linear-gaussian", "sparsity", 2, "sparsity applies only to family sparse-linear"),
    ("relu", "tree_depth", 2, "tree_depth applies only to family decision-tree"),
])
def test_bad_options_are_one_config_error(family: str, option: str, value: int,
                                          message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TrainConfig.flat(d=4, n=5, family=family, **{option: value}).validate()


def test_options_reach_the_family() -> None:
    registry = FamilyRegistry()
    assert registry.make_family("sparse-linear", 6, 3, 0.0, sparsity=4).sparsity == 4  # type: ignore[attr-defined]
    config = TrainConfig.flat(d=5, n=3, family="decision-tree", tree_depth=2)
    assert config.make_task().tree_depth == 2  # type: ignore[attr-defined]
    assert TrainConfig.from_json(config.to_json()) == config
    assert TrainConfig.flat(d=5, n=3, family="relu-network").to_json().get("network_width") \
        is None


@given(option=st.sampled_from(["sparsity", "tree_depth", "network_width"]),
       value=st.one_of(st.integers(-5, 200_000), st.floats(-3, 30), st.booleans(),
                       st.text(max_size=3), st.none()))
def test_family_options_accept_exactly_the_allowed(option: str, value: object) -> None:
    d = 6
    upper = {"sparsity": d, "tree_depth": 16, "network_width": 100_000}[option]
    build = {"sparsity": SparseLinearTask, "tree_depth": DecisionTreeTask,
             "network_width": ReluNetworkTask}[option]
    allowed = (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= upper) \
        or (value is None and option == "sparsity")
    if allowed:
        assert build(d, 3, 0.0, value) is not None  # type: ignore[operator]
    else:
        with pytest.raises(ConfigError) as error:
            build(d, 3, 0.0, value)  # type: ignore[operator]
        assert option in str(error.value) and "\n" not in str(error.value)
