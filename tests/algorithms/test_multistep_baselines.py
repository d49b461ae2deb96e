"""k-step GD with given or optimal steps, preconditioned k-step GD and GD++ against
independent computations: the polynomial form, the product formula, token-level updates and
a small case worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclab.algorithms import GDPlusPlus, KStepGD, PreconditionedKStepGD
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.depth.multistep import multistep_optimum
from iclab.utils.errors import ConfigError


def regression(batch: int, n: int, d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """X: (B, n, d), y: (B, n), float64."""
    generator = torch.Generator().manual_seed(seed)
    X = torch.randn(batch, n, d, generator=generator, dtype=torch.float64)
    y = torch.randn(batch, n, generator=generator, dtype=torch.float64)
    return X, y


def test_optimal_steps_give_the_polynomial_predictor() -> None:
    """w_L = q(S) X^T y with 1 - t q(t) = prod (1 - eta t): q's coefficients from numpy's
    polynomial with roots 1/eta, then matrix powers."""
    task = LinearGaussian(4, 12, 0.5)
    etas = multistep_optimum(task, 3).etas
    gd = KStepGD.optimal(task, 3)
    assert gd.etas == etas and gd.steps == 3
    X, y = regression(16, 12, 4, seed=0)
    p = np.poly([1 / eta for eta in etas])                  # monic, highest degree first
    p = p / p[-1]                                           # p(0) = 1
    q = -p[::-1][1:]                                        # 1 - t q(t) = p(t)
    for b in range(16):
        S, v = (X[b].T @ X[b]).numpy(), (X[b].T @ y[b]).numpy()
        expected = sum(c * np.linalg.matrix_power(S, j) for j, c in enumerate(q)) @ v
        assert np.allclose(gd.fit(X, y)[b].numpy(), expected, rtol=1e-10, atol=1e-12)


def test_order_of_the_steps_does_not_matter() -> None:
    X, y = regression(8, 10, 3, seed=1)
    etas = [0.02, 0.07, 0.11]
    forward, backward = KStepGD(etas).fit(X, y), KStepGD(etas[::-1]).fit(X, y)
    assert torch.allclose(forward, backward, rtol=1e-12, atol=1e-13)


def test_constant_steps_two_ways() -> None:
    X, y = regression(8, 10, 3, seed=2)
    assert torch.equal(KStepGD(0.05, 4).fit(X, y), KStepGD([0.05] * 4).fit(X, y))
    assert KStepGD(0.05, 4).eta == 0.05 and KStepGD([0.05, 0.06]).eta is None


def test_preconditioned_with_multiples_of_identity_is_plain() -> None:
    X, y = regression(8, 10, 3, seed=3)
    etas = [0.03, 0.09]
    plain = KStepGD(etas).fit(X, y)
    preconditioned = PreconditionedKStepGD([eta * np.eye(3) for eta in etas]).fit(X, y)
    assert torch.allclose(plain, preconditioned, rtol=1e-13, atol=1e-14)


def test_preconditioned_against_the_product_formula() -> None:
    """w_k = sum_l [prod_(j > l) (I - A_j S)] A_l X^T y (later steps on the left)."""
    rng = np.random.default_rng(4)
    A = [0.05 * rng.normal(size=(3, 3)) for _ in range(3)]
    X, y = regression(6, 9, 3, seed=4)
    w = PreconditionedKStepGD(A).fit(X, y).numpy()
    for b in range(6):
        S, v = (X[b].T @ X[b]).numpy(), (X[b].T @ y[b]).numpy()
        total = np.zeros((3, 3))
        for l_index, A_l in enumerate(A):
            product = np.eye(3)
            for A_j in A[l_index + 1:]:
                product = (np.eye(3) - A_j @ S) @ product
            total += product @ A_l
        assert np.allclose(w[b], total @ v, rtol=1e-11, atol=1e-12)


def test_gd_plus_plus_by_hand() -> None:
    """d = 1, n = 2: x = (1, 2), y = (1, 3), x_q = 1; eta = (0.1, 0.05), gamma = (0.02, 0.3).
    Layer 1: s = -0.1 (1*1 + 3*2) = -0.7; r = (1 - 0.1*7*1, 3 - 0.1*7*2) = (0.3, 1.6);
    S = 5, x -> 0.9 x (query: 0.9). Layer 2: sum r_j x_j = 0.9*0.3 + 1.8*1.6 = 3.15;
    s = -0.7 - 0.05 * 3.15 * 0.9 = -0.84175. Prediction 0.84175 (the last gamma is unused)."""
    X = torch.tensor([[[1.0], [2.0]]], dtype=torch.float64)
    y = torch.tensor([[1.0, 3.0]], dtype=torch.float64)
    x_q = torch.tensor([[1.0]], dtype=torch.float64)
    yhat = GDPlusPlus([0.1, 0.05], [0.02, 0.3])(X, y, x_q)
    assert float(yhat) == pytest.approx(0.84175, rel=1e-14)
    assert float(GDPlusPlus([0.1, 0.05], [0.02, 0.3]).fit(X, y)) == pytest.approx(0.84175)


def tokens_gd_plus_plus(X: np.ndarray, y: np.ndarray, x_q: np.ndarray, etas: list[float],
                        gammas: list[float]) -> float:
    """The layers written on tokens, one example at a time: e_j = [x_j; r_j], query [x_q; s]."""
    xs, rs = [x.copy() for x in X], list(y)
    query, s = x_q.copy(), 0.0
    for eta, gamma in zip(etas, gammas, strict=True):
        new_xs, new_rs = [], []
        for x_j, r_j in zip(xs, rs, strict=True):
            new_xs.append(x_j - gamma * sum(x_i * (x_i @ x_j) for x_i in xs))
            new_rs.append(r_j - eta * sum(r_i * (x_i @ x_j) for x_i, r_i in zip(xs, rs,
                                                                                   strict=True)))
        new_query = query - gamma * sum(x_i * (x_i @ query) for x_i in xs)
        s = s - eta * sum(r_i * (x_i @ query) for x_i, r_i in zip(xs, rs, strict=True))
        xs, rs, query = new_xs, new_rs, new_query
    return -s


def test_gd_plus_plus_against_token_updates() -> None:
    X, y = regression(5, 6, 3, seed=5)
    x_q = torch.randn(5, 3, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    etas, gammas = [0.05, 0.08, 0.04], [0.01, 0.02, 0.015]
    yhat = GDPlusPlus(etas, gammas)(X, y, x_q).numpy()
    for b in range(5):
        expected = tokens_gd_plus_plus(X[b].numpy(), y[b].numpy(), x_q[b].numpy(), etas, gammas)
        assert yhat[b] == pytest.approx(expected, rel=1e-12)


def test_gd_plus_plus_without_curvature_correction_is_gd() -> None:
    X, y = regression(8, 10, 3, seed=7)
    assert torch.allclose(GDPlusPlus([0.03, 0.06], [0.0, 0.0]).fit(X, y),
                          KStepGD([0.03, 0.06]).fit(X, y), rtol=1e-13, atol=1e-14)


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=4))
def test_k_step_gd_refuses_non_finite_steps(etas: list[float]) -> None:
    if all(math.isfinite(e) for e in etas):
        assert KStepGD(etas).etas == tuple(etas)
    else:
        with pytest.raises(ConfigError, match="eta must be a finite number"):
            KStepGD(etas)


def test_refusals() -> None:
    with pytest.raises(ConfigError, match="steps = 3 but 2 step sizes"):
        KStepGD([0.1, 0.2], 3)
    with pytest.raises(ConfigError, match="steps must be >= 1"):
        KStepGD([])
    with pytest.raises(ConfigError, match="one gamma per eta"):
        GDPlusPlus([0.1, 0.2], [0.1])
    with pytest.raises(ConfigError, match="gamma must be a finite number"):
        GDPlusPlus([0.1], [math.nan])
    with pytest.raises(ConfigError, match="at least one preconditioner"):
        PreconditionedKStepGD([])
    with pytest.raises(ConfigError, match=r"preconditioner 1 must be a finite \(2, 2\) matrix"):
        PreconditionedKStepGD([np.eye(2), np.eye(3)])
    with pytest.raises(ConfigError, match="preconditioner 0 must be a finite"):
        PreconditionedKStepGD([np.full((2, 2), np.inf)])
    X, y = regression(2, 4, 3, seed=9)
    with pytest.raises(ConfigError, match="2-dimensional but the prompts have d = 3"):
        PreconditionedKStepGD([np.eye(2)]).fit(X, y)
