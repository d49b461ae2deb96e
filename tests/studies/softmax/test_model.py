"""One-layer softmax attention: constructed weights against direct computations, validation,
and a short training run."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclab.studies.softmax.model import SoftmaxAttention, SoftmaxModelOptions
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.gaussian import loss_star_isotropic
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from tests.helpers import prompts

F64 = torch.float64


def model(d: int = 3, seed: int = 0, heads: int = 1, mlp_width: int = 0) -> SoftmaxAttention:
    options = SoftmaxModelOptions(heads=heads, mlp_width=mlp_width, init_scale=1.0)
    return SoftmaxAttention(d, options, make_generator(seed, "test-init"), dtype=F64)


def smoother(beta: float, value: torch.Tensor, d: int) -> SoftmaxAttention:
    """One head with logits beta x_i . x_q (key_dim d) and value row ``value`` for t[d]."""
    net = SoftmaxAttention(d, SoftmaxModelOptions(key_dim=d, heads=1), dtype=F64)
    with torch.no_grad():
        net.W_K.zero_()
        net.W_Q.zero_()
        net.W_K[0, :, :d] = torch.eye(d, dtype=F64)
        net.W_Q[0, :, :d] = beta * math.sqrt(d) * torch.eye(d, dtype=F64)
        net.W_V.zero_()
        net.W_V[0, d] = value
    return net


def test_shapes_seeding_and_dtype() -> None:
    p = prompts(3, 6, batch=10)
    a, b, c = (model(seed=1, heads=2, mlp_width=4), model(seed=1, heads=2, mlp_width=4),
               model(seed=2, heads=2, mlp_width=4))
    assert a(p.X, p.y, p.x_q).shape == (10,)
    assert torch.equal(a(p.X, p.y, p.x_q), b(p.X, p.y, p.x_q))
    assert not torch.equal(a(p.X, p.y, p.x_q), c(p.X, p.y, p.x_q))
    assert a.W_K.shape == (2, 4, 4) and a.W_V.shape == (2, 4, 4)
    assert a(p.X, p.y, p.x_q).dtype == F64
    weights = a.attention_weights(p.X, p.y, p.x_q)
    assert weights.shape == (10, 2, 6) and bool((weights >= 0).all())
    torch.testing.assert_close(weights.sum(-1), torch.ones(10, 2, dtype=F64))


def test_kernel_smoother_against_a_direct_computation() -> None:
    """Logits beta x_i.x_q and the label as value: sum_i y_i exp(beta x_i.x_q) / sum_j (...)."""
    p = prompts(3, 7, batch=20, seed=4)
    beta = 0.8
    net = smoother(beta, torch.tensor([0.0, 0.0, 0.0, 1.0], dtype=F64), 3)
    X, y, x_q = p.X.numpy(), p.y.numpy(), p.x_q.numpy()
    expected = []
    for b in range(20):
        logits = np.array([beta * X[b, i] @ x_q[b] for i in range(7)])
        weights = np.exp(logits - logits.max())
        expected.append(float(weights @ y[b] / weights.sum()))
    np.testing.assert_allclose(net(p.X, p.y, p.x_q).detach().numpy(), expected, rtol=1e-12)


def test_query_token_not_attended_and_examples_exchangeable() -> None:
    """Permuting the context leaves yhat unchanged; with zero queries attention is uniform and
    yhat is the mean of the examples' values (the query's own token contributes nothing)."""
    p = prompts(3, 6, batch=8, seed=2)
    net = model(heads=3, mlp_width=5)
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    torch.testing.assert_close(net(p.X[:, perm], p.y[:, perm], p.x_q), net(p.X, p.y, p.x_q))
    uniform = model(heads=2)
    with torch.no_grad():
        uniform.W_Q.zero_()
    tokens = torch.cat([p.X, p.y[..., None]], -1)
    expected = (tokens.mean(1) @ uniform.W_V[:, 3].T).sum(-1)
    torch.testing.assert_close(uniform(p.X, p.y, p.x_q), expected)


def test_two_heads_approach_linear_attention_at_small_logits() -> None:
    """Head 1: logits beta x_i.x_q, value y/beta; head 2: uniform, value -y/beta. As beta -> 0,
    yhat -> (1/n) sum_i (x_i.x_q)(y_i - ybar), the linear attention of the module docstring,
    with an error O(beta)."""
    d, n = 3, 8
    p = prompts(d, n, batch=50, seed=6)
    ybar = p.y.mean(1, keepdim=True)
    linear = ((p.X @ p.x_q[..., None]).squeeze(-1) * (p.y - ybar)).mean(1)
    errors = []
    for beta in (1e-2, 1e-3):
        net = SoftmaxAttention(d, SoftmaxModelOptions(key_dim=d, heads=2), dtype=F64)
        with torch.no_grad():
            net.W_K.zero_()
            net.W_Q.zero_()
            net.W_V.zero_()
            net.W_K[0, :, :d] = torch.eye(d, dtype=F64)
            net.W_Q[0, :, :d] = beta * math.sqrt(d) * torch.eye(d, dtype=F64)
            net.W_V[0, d, d] = 1 / beta
            net.W_V[1, d, d] = -1 / beta
        with torch.no_grad():
            errors.append(float((net(p.X, p.y, p.x_q) - linear).abs().max()))
    assert errors[1] < 0.2 * errors[0] and errors[1] < 0.05 * float(linear.abs().max())


def test_mlp_with_zero_output_changes_nothing() -> None:
    p = prompts(3, 5, batch=6, seed=1)
    plain, with_mlp = model(seed=3, heads=2), model(seed=3, heads=2, mlp_width=7)
    with torch.no_grad():
        with_mlp.W_K.copy_(plain.W_K)
        with_mlp.W_Q.copy_(plain.W_Q)
        with_mlp.W_V.copy_(plain.W_V)
        assert with_mlp.mlp is not None
        with_mlp.mlp["W_2"].zero_()
    torch.testing.assert_close(with_mlp(p.X, p.y, p.x_q), plain(p.X, p.y, p.x_q))
    with torch.no_grad():
        with_mlp.mlp["b_2"][3] = 0.5
    torch.testing.assert_close(with_mlp(p.X, p.y, p.x_q), plain(p.X, p.y, p.x_q) + 0.5)


def test_every_parameter_gets_a_gradient() -> None:
    p = prompts(3, 5, batch=16)
    net = model(heads=2, mlp_width=4)
    ((net(p.X, p.y, p.x_q) - p.y_q) ** 2).mean().backward()
    for name, parameter in net.named_parameters():
        assert parameter.grad is not None and float(parameter.grad.abs().sum()) > 0, name


@given(d=st.integers(-3, 6), key_dim=st.one_of(st.none(), st.integers(-2, 5)),
       heads=st.integers(-2, 4), mlp_width=st.integers(-2, 4))
def test_options_validation(d: int, key_dim: int | None, heads: int, mlp_width: int) -> None:
    valid = d >= 1 and (key_dim is None or key_dim >= 1) and heads >= 1 and mlp_width >= 0
    options = SoftmaxModelOptions(key_dim, heads, mlp_width)
    if valid:
        net = SoftmaxAttention(d, options, dtype=F64)
        assert net.W_K.shape == (heads, d + 1 if key_dim is None else key_dim, d + 1)
    else:
        with pytest.raises(ConfigError) as error:
            SoftmaxAttention(d, options)
        assert "\n" not in str(error.value) and "must be an integer" in str(error.value)


@pytest.mark.parametrize("scale", [0.0, -1.0, math.nan, math.inf])
def test_init_scale_validation(scale: float) -> None:
    with pytest.raises(ConfigError, match="init_scale"):
        SoftmaxAttention(2, SoftmaxModelOptions(init_scale=scale))


def train(heads: int, steps: int, batch: int, lr: float, seed: int = 0, test_prompts: int = 20_000
          ) -> tuple[float, float]:
    """Adam with a cosine schedule on fresh whole prompts; test loss and its standard error."""
    task = LinearGaussian(5, 20, 0.5)
    net = SoftmaxAttention(5, SoftmaxModelOptions(heads=heads), make_generator(seed, "init"))
    optimiser = torch.optim.Adam(net.parameters(), lr=lr)
    for step in range(steps):
        for group in optimiser.param_groups:
            group["lr"] = lr * 0.5 * (1 + math.cos(math.pi * step / steps))
        p = task.sample_prompts(batch, make_generator(seed, "train", step))
        loss = ((net(p.X, p.y, p.x_q) - p.y_q) ** 2).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    test = task.sample_prompts(test_prompts, make_generator(seed, "eval")).to(F64)
    with torch.no_grad():
        error = (net.to(F64)(test.X, test.y, test.x_q) - test.y_q) ** 2
    return float(error.mean()), float(error.std() / math.sqrt(error.numel()))


@pytest.mark.usefixtures("one_thread")
def test_short_training_beats_the_zero_predictor() -> None:
    """200 steps: well below E[y_q^2] = d + sigma^2 = 5.25, the zero predictor's loss."""
    loss, stderr = train(heads=1, steps=200, batch=512, lr=0.01)
    assert loss < 5.25 - 10 * stderr


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_two_heads_approach_the_optimal_lsa() -> None:
    """Two heads can cancel the smoother's mean term (module docstring): the trained loss
    comes within 7% of the optimal one-layer LSA's L* (1.4405; 1.495 +- 0.006 measured), while
    one head stays far above it (2.45 measured)."""
    loss_star = loss_star_isotropic(20, 5, 0.5)
    two, _ = train(heads=2, steps=2000, batch=1024, lr=0.01, test_prompts=200_000)
    one, _ = train(heads=1, steps=500, batch=1024, lr=0.02)
    assert loss_star * 0.97 < two < loss_star * 1.07
    assert one > 1.35 * loss_star
