"""The one-layer LSA's fused loss on Z statistics against autograd of the plain formula and
against the token-by-token attention."""

from __future__ import annotations

import pytest
import torch

from iclab.models.lsa.hand_gradients import without_autograd
from iclab.models.lsa.statistics_loss import z_statistics_loss
from iclab.tasks.relu_statistics import sample_relu_z_statistics
from iclab.utils.seeding import make_generator
from tests.helpers import prompts, random_lsa, z_statistics_of
from tests.models.lsa.test_layer import literal_attention

F64 = torch.float64


def weights(d: int, key_dim: int, value_dim: int, seed: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    shapes = [(key_dim, d + 1), (key_dim, d + 1), (value_dim, d + 1), (value_dim,)]
    return [torch.randn(*shape, generator=generator, dtype=F64).requires_grad_()
            for shape in shapes]


@pytest.mark.parametrize(("d", "n", "key_dim", "value_dim", "scale"),
                         [(5, 20, 6, 6, 1.0), (5, 20, 6, 6, 0.05), (2, 3, 1, 4, 0.5),
                          (1, 1, 2, 2, 1.0)])
def test_loss_and_gradients_equal_autograd_of_the_plain_formula(
    d: int, n: int, key_dim: int, value_dim: int, scale: float
) -> None:
    stats = sample_relu_z_statistics(d, n, 0.3, 257, make_generator(0, "z"), F64)
    params = weights(d, key_dim, value_dim, d + n)
    fused = z_statistics_loss(*params, stats, scale)
    W_K, W_Q, W_V, h = params
    u, M = W_V.T @ h, W_K.T @ W_Q[:, :d]
    yhat = scale * torch.einsum("a,bac,cd,bd->b", u, stats.Z, M, stats.x_q)
    plain = (yhat - stats.y_q).square().mean()
    torch.testing.assert_close(fused, plain, rtol=1e-12, atol=0.0)
    for a, b in zip(torch.autograd.grad(fused, params), torch.autograd.grad(plain, params),
                    strict=True):
        torch.testing.assert_close(a, b, rtol=1e-11, atol=1e-13)


def test_the_backward_scales_with_the_incoming_gradient() -> None:
    stats = sample_relu_z_statistics(3, 6, 0.0, 64, make_generator(1, "z"), F64)
    params = weights(3, 4, 4, 1)
    once = torch.autograd.grad(z_statistics_loss(*params, stats), params)
    thrice = torch.autograd.grad(-3.0 * z_statistics_loss(*params, stats), params)
    for a, b in zip(once, thrice, strict=True):
        torch.testing.assert_close(b, -3.0 * a, rtol=1e-14, atol=0.0)


def test_without_gradients_it_gives_the_same_number() -> None:
    stats = sample_relu_z_statistics(4, 9, 0.5, 128, make_generator(2, "z"), F64)
    params = weights(4, 5, 5, 2)
    with_grad = z_statistics_loss(*params, stats, 1 / 9)
    with torch.no_grad():
        without = z_statistics_loss(*params, stats, 1 / 9)
    assert not without.requires_grad
    assert float(without) == float(with_grad.detach())


@pytest.mark.parametrize("normalise", [False, True])
@pytest.mark.parametrize("attend_query", [False, True])
def test_the_model_loss_on_z_is_the_literal_attention_loss(
    normalise: bool, attend_query: bool
) -> None:
    """``statistics_loss`` of the lsa model (fused without the query term, from
    ``forward_statistics`` with it) equals the mean squared error of attention computed token
    by token, in value and gradient."""
    d, n = 3, 7
    model = random_lsa(d, normalise=normalise, attend_query=attend_query, key_dim=2,
                       value_dim=5)
    batch = prompts(d, n, batch=16)
    stats = z_statistics_of(batch)
    on_z = model.statistics_loss(stats)
    literal = (literal_attention(model, batch.X, batch.y, batch.x_q) - batch.y_q).square().mean()
    torch.testing.assert_close(on_z, literal, rtol=1e-12, atol=0.0)
    params = list(model.parameters())
    for a, b in zip(torch.autograd.grad(on_z, params), torch.autograd.grad(literal, params),
                    strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_a_float32_model_reads_float64_statistics() -> None:
    stats = sample_relu_z_statistics(3, 5, 0.2, 32, make_generator(3, "z"), F64)
    params = [p.detach().float().requires_grad_() for p in weights(3, 4, 4, 3)]
    loss = z_statistics_loss(*params, stats)
    assert loss.dtype == torch.float32
    reference = z_statistics_loss(*[p.double() for p in params], stats)
    torch.testing.assert_close(loss.double(), reference, rtol=1e-5, atol=0.0)


def test_a_loss_function_that_gives_no_gradients_when_asked_is_an_error() -> None:
    weights = tuple(torch.zeros(2, 2) for _ in range(4))

    def broken(*args: object, gradients: bool) -> tuple[torch.Tensor, None]:
        return torch.zeros(()), None

    with pytest.raises(RuntimeError, match="no gradients"):
        without_autograd(broken, weights)
