"""The nuisance-free one-layer LSA on (X^T y, x_q, y_q): its fused loss against the loss on Z
and autograd of the plain formula, and when the model reads these statistics."""

from __future__ import annotations

import pytest
import torch

from iclab.models.lsa.layer import LinearSelfAttention
from iclab.models.lsa.statistics_loss import xy_statistics_loss
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.tasks.nonlinear import ReluTask
from iclab.training.objective import make_objective
from iclab.utils.batches import XYStatistics, ZStatistics, shared_statistics_kind
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from tests.helpers import random_lsa, z_statistics_of

F64 = torch.float64


def nuisance_free_lsa(d: int, **options: object) -> LinearSelfAttention:
    """O(1) random weights, then held at u_x = m_y = 0 (what the gd-subspace start does)."""
    model = random_lsa(d, **options)
    model.constrain_nuisance_free()
    return model


def both_statistics(d: int, n: int, sigma: float, count: int) -> tuple[XYStatistics,
                                                                        ZStatistics]:
    prompts = ReluTask(d, n, sigma).sample_prompts(count, make_generator(0, "p"), F64)
    Z = z_statistics_of(prompts)
    xy = XYStatistics(xy=torch.einsum("bnd,bn->bd", prompts.X, prompts.y), x_q=prompts.x_q,
                      y_q=prompts.y_q, n=n)
    return xy, Z


def masked_grads(model: LinearSelfAttention, loss: torch.Tensor) -> list[torch.Tensor]:
    grads = dict(zip([name for name, _ in model.named_parameters()],
                     torch.autograd.grad(loss, list(model.parameters())), strict=True))
    for param, mask in model.gradient_masks():
        name = next(n for n, p in model.named_parameters() if p is param)
        grads[name] = grads[name] * mask
    return [grads[name] for name, _ in model.named_parameters()]


@pytest.mark.parametrize("normalise", [False, True])
@pytest.mark.parametrize("attend_query", [False, True])
@pytest.mark.parametrize(("d", "n", "key_dim", "value_dim"), [(3, 7, 2, 5), (5, 20, None, None),
                                                              (1, 1, None, 3)])
def test_the_loss_on_xy_is_the_masked_loss_on_z(
    normalise: bool, attend_query: bool, d: int, n: int, key_dim: int | None,
    value_dim: int | None,
) -> None:
    """Same prompts as (X^T y, x_q, y_q) and as Z: equal predictions, equal losses, and the
    gradients of the loss on X^T y are those on Z after the model's masks."""
    model = nuisance_free_lsa(d, normalise=normalise, attend_query=attend_query,
                              key_dim=key_dim, value_dim=value_dim)
    xy, Z = both_statistics(d, n, 0.4, 64)
    torch.testing.assert_close(model.forward_statistics(xy), model.forward_statistics(Z),
                               rtol=1e-12, atol=1e-12)
    on_xy, on_z = model.statistics_loss(xy), model.statistics_loss(Z)
    torch.testing.assert_close(on_xy, on_z, rtol=1e-12, atol=0.0)
    raw = torch.autograd.grad(on_xy, list(model.parameters()))
    for a, b in zip(raw, masked_grads(model, on_z), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    assert any(float(g.abs().max()) > 1e-3 for g in raw)


def test_the_fused_loss_equals_autograd_of_the_plain_formula() -> None:
    d, n = 4, 9
    model = nuisance_free_lsa(d, key_dim=3, value_dim=6)
    xy, _ = both_statistics(d, n, 0.3, 128)
    params = [model.W_K, model.W_Q, model.W_V, model.h]
    fused = xy_statistics_loss(*params, xy, 0.25)
    u_y = model.W_V[:, d] @ model.h
    M_x = model.W_K[:, :d].T @ model.W_Q[:, :d]
    plain = (0.25 * u_y * (xy.xy * (xy.x_q @ M_x.T)).sum(-1) - xy.y_q).square().mean()
    torch.testing.assert_close(fused, plain, rtol=1e-12, atol=0.0)
    for a, b in zip(torch.autograd.grad(fused, params), torch.autograd.grad(plain, params),
                    strict=True):
        torch.testing.assert_close(a, b, rtol=1e-11, atol=1e-13)


def test_a_model_not_held_nuisance_free_refuses_xy_statistics() -> None:
    model = random_lsa(3)
    xy, _ = both_statistics(3, 5, 0.2, 8)
    with pytest.raises(ConfigError, match="u_x = 0 and m_y = 0"):
        model.statistics_loss(xy)
    with pytest.raises(ConfigError, match="u_x = 0 and m_y = 0"):
        model.forward_statistics(xy)


def test_the_kind_trained_on_follows_the_model_state() -> None:
    """relu draws Z and X^T y: a free lsa reads Z, a nuisance-free one X^T y; a linear
    Gaussian family's Bartlett statistics stay first; the class reads what it declares."""
    relu, gaussian = ReluTask(3, 6, 0.2), LinearGaussian(3, 6, 0.2)
    free, held = random_lsa(3), nuisance_free_lsa(3)
    assert shared_statistics_kind(relu, free) == "wishart"
    assert shared_statistics_kind(relu, held) == "xy"
    assert shared_statistics_kind(relu, LinearSelfAttention) == "wishart"
    assert shared_statistics_kind(gaussian, held) == "bartlett"



@pytest.mark.parametrize("held", [True, False])
def test_the_training_objective_stores_the_gradients_autograd_would(held: bool) -> None:
    """The statistics objective takes the model's own gradients (``statistics_loss_and_
    gradients``): it returns the loss detached, with each parameter's ``.grad`` equal to
    autograd's gradient of ``statistics_loss`` on the same batch (X^T y when held
    nuisance-free, Z otherwise); a step through ``take_step`` is autograd's step."""
    relu = ReluTask(3, 6, 0.2)
    model = nuisance_free_lsa(3) if held else random_lsa(3)
    objective = make_objective(relu, model, "statistics", 64, 0, torch.device("cpu"))
    loss = objective(4)
    assert loss.shape == () and not loss.requires_grad
    stats = relu.sample_xy_statistics(64, make_generator(0, "train", 4)) if held else \
        relu.sample_z_statistics(64, make_generator(0, "train", 4))    # float32, as trained
    reference = model.statistics_loss(stats)
    torch.testing.assert_close(loss, reference.detach(), rtol=1e-12, atol=0.0)
    expected = torch.autograd.grad(reference, list(model.parameters()))
    for param, grad in zip(model.parameters(), expected, strict=True):
        assert param.grad is not None
        torch.testing.assert_close(param.grad, grad, rtol=1e-10, atol=1e-13)


def test_gradients_without_autograd_only_where_the_model_has_them() -> None:
    """Z with the query's own term and the Bartlett statistics are left to autograd."""
    xy, Z = both_statistics(3, 5, 0.2, 8)
    assert random_lsa(3, attend_query=True).statistics_loss_and_gradients(Z) is None
    gaussian = LinearGaussian(3, 5, 0.2).sample_statistics(8, make_generator(0, "g"), F64)
    assert random_lsa(3).statistics_loss_and_gradients(gaussian) is None
    with pytest.raises(ConfigError, match="u_x = 0 and m_y = 0"):
        random_lsa(3).statistics_loss_and_gradients(xy)
