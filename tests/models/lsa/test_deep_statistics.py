"""The hand-written backward of the L-layer Z-path prediction against autograd."""

from __future__ import annotations

import pytest
import torch

from iclab.models.lsa.deep_statistics import deep_statistics_prediction
from iclab.utils.seeding import make_generator

F64 = torch.float64

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def plain_recursion(P: torch.Tensor, Q: torch.Tensor, Z: torch.Tensor, x_q: torch.Tensor,
                    n: int) -> torch.Tensor:
    """T_l = I + P_l G_l Q_l / n, G_(l+1) = T_l G_l T_l^T, v_l = T_l v_(l-1) with every
    matrix formed, left to autograd; yhat = -v_L[d]."""
    batch, d = x_q.shape
    eye = torch.eye(d + 1, dtype=Z.dtype)
    v = torch.cat([x_q, torch.zeros(batch, 1, dtype=Z.dtype)], -1)
    G = Z
    for P_l, Q_l in zip(P, Q, strict=True):
        T = eye + P_l @ G @ Q_l / n
        v = torch.einsum("bij,bj->bi", T, v)
        G = T @ G @ T.transpose(1, 2)
    return -v[:, d]


def random_inputs(
    d: int, n: int, layers: int, batch: int, seed: int, scale: float = 0.5
) -> tuple[torch.Tensor, ...]:
    generator = make_generator(seed, "test-deep-statistics")
    tokens = torch.randn(batch, n, d + 1, generator=generator, dtype=F64)
    Z = tokens.transpose(1, 2) @ tokens
    x_q = torch.randn(batch, d, generator=generator, dtype=F64)
    P = scale * torch.randn(layers, d + 1, d + 1, generator=generator, dtype=F64)
    Q = scale * torch.randn(layers, d + 1, d + 1, generator=generator, dtype=F64)
    weights = torch.randn(batch, generator=generator, dtype=F64)
    return P, Q, Z, x_q, weights


@pytest.mark.parametrize(("d", "n", "layers"),
                         [(1, 3, 1), (3, 7, 1), (2, 5, 2), (3, 4, 3), (4, 9, 4), (2, 1, 5)])
def test_value_and_gradients_match_autograd_of_the_plain_recursion(
    d: int, n: int, layers: int
) -> None:
    P, Q, Z, x_q, weights = random_inputs(d, n, layers, batch=16, seed=10 * d + layers)
    values = []
    grads = []
    for function in (deep_statistics_prediction, plain_recursion):
        P_leaf, Q_leaf = P.clone().requires_grad_(), Q.clone().requires_grad_()
        yhat = function(P_leaf, Q_leaf, Z, x_q, n)
        values.append(yhat.detach())
        grads.append(torch.autograd.grad((weights * yhat).sum(), (P_leaf, Q_leaf)))
    torch.testing.assert_close(values[0], values[1], rtol=1e-10, atol=1e-12)
    for got, expected in zip(grads[0], grads[1], strict=True):
        assert expected.abs().max() > 1e-3
        torch.testing.assert_close(got, expected, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_gradcheck(layers: int) -> None:
    P, Q, Z, x_q, _ = random_inputs(2, 4, layers, batch=3, seed=layers, scale=0.3)
    assert torch.autograd.gradcheck(
        lambda P_, Q_: deep_statistics_prediction(P_, Q_, Z, x_q, 4),
        (P.requires_grad_(), Q.requires_grad_()),
    )


def test_batch_first_and_batch_last_storage_agree() -> None:
    P, Q, Z, x_q, _ = random_inputs(3, 6, 3, batch=8, seed=0)
    batch_last = Z.permute(1, 2, 0).contiguous().permute(2, 0, 1)
    assert not batch_last.is_contiguous()
    torch.testing.assert_close(deep_statistics_prediction(P, Q, batch_last, x_q, 6),
                               deep_statistics_prediction(P, Q, Z.contiguous(), x_q, 6),
                               rtol=0, atol=0)


def test_expanded_weights_of_a_looped_model_get_the_summed_gradient() -> None:
    P, Q, Z, x_q, weights = random_inputs(2, 5, 3, batch=8, seed=1)
    P1, Q1 = P[:1].clone().requires_grad_(), Q[:1].clone().requires_grad_()
    yhat = deep_statistics_prediction(P1.expand(3, 3, 3), Q1.expand(3, 3, 3), Z, x_q, 5)
    grad_P, grad_Q = torch.autograd.grad((weights * yhat).sum(), (P1, Q1))
    P3, Q3 = P1.detach().expand(3, 3, 3).clone(), Q1.detach().expand(3, 3, 3).clone()
    P3.requires_grad_(), Q3.requires_grad_()
    reference = plain_recursion(P3, Q3, Z, x_q, 5)
    ref_P, ref_Q = torch.autograd.grad((weights * reference).sum(), (P3, Q3))
    torch.testing.assert_close(grad_P[0], ref_P.sum(0))
    torch.testing.assert_close(grad_Q[0], ref_Q.sum(0))
