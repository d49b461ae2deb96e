"""The hand-written backward of the LSA on whole prompts against autograd of the formula."""

from __future__ import annotations

import pytest
import torch

from iclab.models.lsa.layer import LinearSelfAttention
from iclab.models.lsa.options import LSAOptions
from iclab.models.lsa.prompts import batch_inner, prompts_prediction
from iclab.studies.covariates.linear_law import LinearLawTask
from iclab.tasks.nonlinear import ReluTask
from iclab.utils.batches import Prompts
from iclab.utils.seeding import make_generator
from tests.helpers import prompts as gaussian_prompts
from tests.helpers import random_lsa

F64 = torch.float64


def explicit_prediction(model: LinearSelfAttention, p: Prompts) -> torch.Tensor:
    """u^T Z M x_q with Z = sum_i e_i e_i^T formed per prompt, left to autograd: (B,)."""
    d = p.d
    u = model.W_V.T @ model.h
    M = model.W_K.T @ model.W_Q[:, :d]
    tokens = torch.cat([p.X, p.y[..., None]], dim=-1)                 # (B, n, d+1)
    Z = torch.einsum("bia,bic->bac", tokens, tokens)                   # (B, d+1, d+1)
    return torch.einsum("a,bac,ce,be->b", u, Z, M, p.x_q)


def batch_inner_prompts(d: int, n: int, batch: int, seed: int) -> Prompts:
    """Float64 prompts held batch-innermost (the views the relu sampler hands out)."""
    return ReluTask(d, n, 0.3).sample_prompts(batch, make_generator(seed, "t"), F64)


@pytest.mark.parametrize(("d", "n", "key_dim", "layout"),
                         [(1, 1, None, "inner"), (3, 5, 2, "inner"), (4, 7, None, "contiguous"),
                          (5, 3, 7, "contiguous")])
def test_value_and_gradient_match_autograd_of_the_explicit_gram(
    d: int, n: int, key_dim: int | None, layout: str
) -> None:
    model = random_lsa(d, seed=d, key_dim=key_dim)
    p = (batch_inner_prompts(d, n, 50, d) if layout == "inner"
         else gaussian_prompts(d, n, 50, seed=d))
    assert p.X.stride(0) == 1 if layout == "inner" else p.X.is_contiguous()
    weights = torch.randn(50, dtype=F64, generator=make_generator(1, "w"))
    fast = prompts_prediction(model.W_K, model.W_Q, model.W_V, model.h, p.X, p.y, p.x_q)
    fast_grads = torch.autograd.grad((fast * weights).sum(), list(model.parameters()))
    slow = explicit_prediction(model, p)
    slow_grads = torch.autograd.grad((slow * weights).sum(), list(model.parameters()))
    assert torch.allclose(fast, slow, rtol=1e-12, atol=1e-12)
    for got, want in zip(fast_grads, slow_grads, strict=True):
        assert torch.allclose(got, want, rtol=1e-11, atol=1e-12)
    assert not torch.allclose(fast, 1.01 * slow, rtol=1e-6)           # the check can fail


@pytest.mark.parametrize(("normalise", "attend_query"), [(False, True), (True, False),
                                                         (True, True)])
def test_model_forward_with_and_without_a_graph_agree(normalise: bool,
                                                      attend_query: bool) -> None:
    model = random_lsa(3, seed=4, normalise=normalise, attend_query=attend_query)
    p = batch_inner_prompts(3, 6, 40, 2)
    with torch.no_grad():
        plain = model(p.X, p.y, p.x_q)                                  # the plain formula
    recorded = model(p.X, p.y, p.x_q)                                   # the hand-written node
    assert recorded.grad_fn is not None
    assert torch.allclose(recorded, plain, rtol=1e-12, atol=1e-13)


def test_gradients_to_the_prompts_use_the_plain_formula() -> None:
    # A caller differentiating with respect to x_q (the sensitivity measure) gets autograd.
    model = random_lsa(2, seed=1)
    p = batch_inner_prompts(2, 4, 10, 3)
    x_q = p.x_q.detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(model(p.X, p.y, x_q).sum(), x_q)
    u, M = (t.detach() for t in model.effective())
    tokens = torch.cat([p.X, p.y[..., None]], dim=-1)
    expected = torch.einsum("a,bia,bic,ce->be", u, tokens, tokens, M)  # d yhat / d x_q
    assert torch.allclose(grad, expected, rtol=1e-12, atol=1e-12)


def test_nuisance_masks_still_hold_on_whole_prompts() -> None:
    from iclab.training.adam import Adam
    from iclab.training.exact import take_step
    from iclab.training.objective import make_objective

    model = LinearSelfAttention(3, LSAOptions(init="gd-subspace"), make_generator(0, "init"))
    task = LinearLawTask(3, 5, 0.5)
    model.prepare_for_task(task)                                         # sign-symmetric
    masks = model.gradient_masks()
    assert len(masks) == 2
    before = model.W_K.detach().clone()
    objective = make_objective(task, model, "prompts", 64, 0, torch.device("cpu"))
    optimizer = Adam(model.parameters(), lr=0.01)
    for step in range(3):
        take_step(optimizer, objective, step, None, masks)
    assert torch.all(model.W_K[:, 3] == 0) and torch.all(model.W_V[:, :3] == 0)
    assert not torch.equal(model.W_K[:, :3], before[:, :3])              # the rest trains


def test_batch_inner_copies_only_when_needed() -> None:
    p = batch_inner_prompts(2, 3, 8, 0)
    assert batch_inner(p.X).data_ptr() == p.X.data_ptr()                # a view
    contiguous = torch.zeros(8, 3, 2)
    moved = batch_inner(contiguous)
    assert moved.shape == (2, 3, 8) and moved.stride(-1) == 1
    assert torch.equal(moved.permute(2, 1, 0), contiguous)
