"""Nonlinear task families: shapes, seeding, and their laws checked against closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclab.tasks.nonlinear import (
    FunctionTask,
    ReluTask,
    TwoLayerReluTask,
    anisotropic_task,
    default_anisotropic_lambda,
)
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator


def _within(estimate: np.ndarray, target: float, sigmas: float = 4.0) -> None:
    mean = float(estimate.mean())
    stderr = float(estimate.std(ddof=1) / math.sqrt(estimate.size))
    assert abs(mean - target) <= sigmas * stderr, (mean, target, stderr)


@pytest.mark.parametrize("family", [ReluTask(3, 7, 0.5), TwoLayerReluTask(3, 7, 0.5, width=4)])
def test_shapes_dtype_and_seeding(family: ReluTask | TwoLayerReluTask) -> None:
    first = family.sample_prompts(11, make_generator(5, "t"), torch.float64)
    again = family.sample_prompts(11, make_generator(5, "t"), torch.float64)
    other = family.sample_prompts(11, make_generator(6, "t"), torch.float64)
    assert first.X.shape == (11, 7, 3) and first.y.shape == (11, 7)
    assert first.x_q.shape == (11, 3) and first.y_q.shape == (11,)
    assert first.X.dtype == torch.float64
    assert torch.equal(first.y, again.y) and torch.equal(first.X, again.X)
    assert not torch.equal(first.y, other.y)


def test_relu_labels_are_relu_of_one_unit_direction_per_prompt() -> None:
    task = ReluTask(d=3, n=40, sigma=0.0)
    prompts = task.sample_prompts(20, make_generator(0, "relu"), torch.float64)
    X = torch.cat([prompts.X, prompts.x_q[:, None]], 1).numpy()
    y = torch.cat([prompts.y, prompts.y_q[:, None]], 1).numpy()
    for inputs, labels in zip(X, y, strict=True):
        positive = labels > 0
        u, *_ = np.linalg.lstsq(inputs[positive], labels[positive], rcond=None)
        assert abs(np.linalg.norm(u) - 1.0) < 1e-10
        np.testing.assert_allclose(labels, np.maximum(inputs @ u, 0.0), atol=1e-10)


def test_relu_moments() -> None:
    # E[f(x)] = 1/sqrt(2 pi), E[f^2] = 1/2, E[f(x) f(x') x.x'] = ||u/2||^2 = 1/4 (same prompt).
    task = ReluTask(d=4, n=2, sigma=0.0)
    p = task.sample_prompts(200_000, make_generator(1, "relu"), torch.float64)
    y, X = p.y.numpy(), p.X.numpy()
    _within(y[:, 0], 1 / math.sqrt(2 * math.pi))
    _within(y[:, 0] ** 2, 0.5)
    _within(y[:, 0] * y[:, 1] * (X[:, 0] * X[:, 1]).sum(-1), 0.25)


def test_relu_noise_query_and_layout() -> None:
    # With noise: E[y^2] = 1/2 + sigma^2; positions share u but not noise, so
    # E[y_1 y_q] = E[relu(t_1)] E[relu(t_q)] = 1/(2 pi); x_q ~ N(0, I).
    sigma = 0.7
    p = ReluTask(d=3, n=2, sigma=sigma).sample_prompts(200_000, make_generator(7, "relu"),
                                                       torch.float64)
    y, y_q, x_q = p.y.numpy(), p.y_q.numpy(), p.x_q.numpy()
    _within(y_q**2, 0.5 + sigma**2)
    _within(y[:, 1] * y_q, 1 / (2 * math.pi))
    _within(x_q[:, 0] * x_q[:, 1], 0.0)
    _within(x_q[:, 2] ** 2, 1.0)
    assert p.X.stride(0) == 1 and p.y.stride(0) == 1        # drawn with the batch innermost
    assert (ReluTask(3, 2, 0.0).sample_prompts(100, make_generator(0, "r")).y >= 0).all()


def test_two_layer_moments_and_weight_law() -> None:
    # A = E f^2 = 1/2 and G = E||g_f||^2 = 1/4 for every width (iclab.theory.rotation_invariant).
    task = TwoLayerReluTask(d=3, n=2, sigma=0.0, width=5)
    p = task.sample_prompts(200_000, make_generator(2, "two"), torch.float64)
    y, X = p.y.numpy(), p.X.numpy()
    _within(y[:, 0] ** 2, 0.5)
    _within(y[:, 0] * y[:, 1] * (X[:, 0] * X[:, 1]).sum(-1), 0.25)
    W, a = task.draw_weights(50_000, make_generator(3, "w"))
    assert W.shape == (50_000, 5, 3) and a.shape == (50_000, 5)
    assert abs(float(W.var()) - 1 / 3) < 0.01 and abs(float(a.var()) - 1.0) < 0.02


def test_noise_is_added_with_variance_sigma_squared() -> None:
    def zero(inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        return inputs.new_zeros(inputs.shape[:2])

    task = FunctionTask(d=2, n=3, sigma=0.7, draw=zero, name="zero")
    p = task.sample_prompts(100_000, make_generator(4, "noise"), torch.float64)
    assert abs(float(p.y.var()) - 0.49) < 0.01
    assert abs(float(p.y.mean())) < 0.01


def test_anisotropic_is_linear_gaussian_with_diagonal_sigma_w() -> None:
    task = anisotropic_task(d=3, n=6, sigma=0.0)
    np.testing.assert_allclose(task.sigma_w, np.diag([0.25, 2.125, 4.0]))
    np.testing.assert_allclose(task.sigma_x, np.eye(3))
    p = task.sample_prompts(40_000, make_generator(5, "aniso"), torch.float64)
    w = torch.linalg.lstsq(p.X, p.y[..., None]).solution.squeeze(-1).numpy()   # exact, sigma=0
    np.testing.assert_allclose(w.var(0), [0.25, 2.125, 4.0], rtol=0.04)
    np.testing.assert_allclose(default_anisotropic_lambda(1), [0.25])
    with pytest.raises(ConfigError, match="lambda"):
        anisotropic_task(3, 6, 0.0, np.array([1.0, -1.0, 2.0]))


def test_function_task_checks_what_draw_returns() -> None:
    def wrong(inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        return inputs.new_zeros(inputs.shape[0])

    task = FunctionTask(d=2, n=3, sigma=0.1, draw=wrong, name="wrong")
    with pytest.raises(ConfigError, match="shape"):
        task.sample_prompts(4, make_generator(0, "x"))


@settings(max_examples=30, deadline=None)
@given(
    d=st.one_of(st.integers(-3, 0), st.just(2)),
    n=st.one_of(st.integers(-3, 0), st.just(2)),
    sigma=st.one_of(st.floats(max_value=-1e-9), st.just(math.nan), st.just(math.inf),
                    st.just(0.5)),
    width=st.one_of(st.integers(-3, 0), st.just(3)),
)
def test_bad_scalars_are_refused(d: int, n: int, sigma: float, width: int) -> None:
    if d == 2 and n == 2 and sigma == 0.5 and width == 3:
        TwoLayerReluTask(d, n, sigma, width)
        return
    with pytest.raises(ConfigError):
        TwoLayerReluTask(d, n, sigma, width)
