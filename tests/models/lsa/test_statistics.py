"""The hand-written backward of the sufficient-statistic prediction against autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclab.models.lsa.layer import LinearSelfAttention
from iclab.models.lsa.options import LSAOptions
from iclab.models.lsa.statistics import statistics_prediction
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.batches import GaussianStatistics
from iclab.utils.seeding import make_generator

F64 = torch.float64


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def plain_prediction(u: torch.Tensor, M: torch.Tensor, stats: GaussianStatistics) -> torch.Tensor:
    """(p.q) c1^2 + c1 z sqrt(|p|^2|q|^2 - (p.q)^2) with p = L^T u, q = L^T M x_q, formed
    explicitly per prompt (L = [[L_x, 0], [w^T L_x, sigma]]) and left to autograd."""
    batch, d = stats.w.shape
    chol_x = torch.eye(d, dtype=u.dtype) if stats.chol_x is None else stats.chol_x
    L = torch.zeros(batch, d + 1, d + 1, dtype=u.dtype)
    L[:, :d, :d] = chol_x
    L[:, d, :d] = stats.w @ chol_x
    L[:, d, d] = stats.sigma
    p = torch.einsum("bji,j->bi", L, u)                                 # L^T u
    q = torch.einsum("bji,bj->bi", L, stats.x_q @ M.T)                  # L^T M x_q
    pq, pp, qq = (p * q).sum(-1), (p * p).sum(-1), (q * q).sum(-1)
    gram = (pp * qq - pq * pq).clamp_min(torch.finfo(u.dtype).tiny)
    return pq * stats.chi2 + stats.chi2.sqrt() * stats.z * gram.sqrt()


def task_with_covariance(d: int, n: int, sigma: float, isotropic: bool) -> LinearGaussian:
    if isotropic:
        return LinearGaussian(d, n, sigma)
    rng = np.random.default_rng(d)
    factor = rng.standard_normal((d, d))
    return LinearGaussian(d, n, sigma, factor @ factor.T + 0.5 * np.eye(d), np.eye(d) * 0.7)


def weights(model: LinearSelfAttention) -> tuple[torch.Tensor, ...]:
    return model.W_K, model.W_Q, model.W_V, model.h


@pytest.mark.parametrize(("d", "sigma", "isotropic", "key_dim"),
                         [(1, 0.3, True, None), (3, 0.0, True, 2), (4, 0.0, False, None),
                          (5, 1.3, False, 7)])
def test_value_and_gradient_match_autograd_of_the_plain_formula(
    d: int, sigma: float, isotropic: bool, key_dim: int | None
) -> None:
    task = task_with_covariance(d, 7, sigma, isotropic)
    stats = task.sample_statistics(500, make_generator(d, "s"), F64)
    options = LSAOptions(key_dim=key_dim, value_dim=key_dim, init_scale=0.8, init="random")
    model = LinearSelfAttention(d, options, make_generator(d, "init"), dtype=F64)
    loss_weights = torch.randn(500, generator=make_generator(d, "weights"), dtype=F64)
    fast = statistics_prediction(*weights(model), stats)
    plain = plain_prediction(*model.effective(), stats)
    assert torch.allclose(fast, plain, rtol=1e-10, atol=1e-12)
    fast_grads = torch.autograd.grad((loss_weights * fast).sum(), weights(model))
    plain_grads = torch.autograd.grad((loss_weights * plain).sum(), weights(model))
    for fast_grad, plain_grad in zip(fast_grads, plain_grads, strict=True):
        assert torch.allclose(fast_grad, plain_grad, rtol=1e-9, atol=1e-10)


def test_gradcheck_in_float64() -> None:
    task = task_with_covariance(2, 4, 0.6, isotropic=False)
    stats = task.sample_statistics(16, make_generator(0, "g"), F64)
    generator = make_generator(1, "weights")
    inputs = tuple(torch.randn(*shape, generator=generator, dtype=F64, requires_grad=True)
                   for shape in ((3, 3), (3, 3), (4, 3), (4,)))
    assert torch.autograd.gradcheck(
        lambda W_K, W_Q, W_V, h: statistics_prediction(W_K, W_Q, W_V, h, stats), inputs
    )


def test_float32_agrees_with_float64() -> None:
    task = task_with_covariance(4, 20, 0.5, isotropic=False)
    stats64 = task.sample_statistics(4096, make_generator(0, "f"), F64)
    stats32 = GaussianStatistics(
        stats64.w.float(), stats64.x_q.float(), stats64.y_q.float(), stats64.chi2.float(),
        stats64.z.float(), None if stats64.chol_x is None else stats64.chol_x.float(),
        stats64.sigma, stats64.n,
    )
    model = LinearSelfAttention(4, LSAOptions(init_scale=0.5, init="random"),
                                make_generator(0, "init"), dtype=F64)
    with torch.no_grad():
        exact = statistics_prediction(*weights(model), stats64)
        single = statistics_prediction(*(t.float() for t in weights(model)), stats32).double()
    assert float((single - exact).abs().max() / exact.abs().max()) < 1e-5


def test_degenerate_gram_gives_finite_gradients() -> None:
    """With h = 0 (so u = 0 and p = 0) the Gram determinant is 0: clamped, no NaN."""
    stats = LinearGaussian(3, 5, 0.0).sample_statistics(64, make_generator(0, "d"), F64)
    model = LinearSelfAttention(3, LSAOptions(init_scale=0.5, init="random"),
                                make_generator(0, "init"), dtype=F64)
    with torch.no_grad():
        model.h.zero_()
    yhat = statistics_prediction(*weights(model), stats)
    grads = torch.autograd.grad((yhat - stats.y_q).square().mean(), weights(model))
    assert torch.all(yhat.abs() < 1e-100)
    assert all(torch.isfinite(grad).all() for grad in grads)
    assert float(grads[3].abs().max()) > 0       # the p.q term still pulls h away from 0


def test_layout_of_the_statistics_does_not_matter() -> None:
    """Contiguous (B, d) statistics give the same prediction as the sampler's (d, B) views."""
    task = task_with_covariance(3, 6, 0.4, isotropic=False)
    stats = task.sample_statistics(100, make_generator(0, "l"), F64)
    assert stats.w.T.is_contiguous() and stats.x_q.T.is_contiguous()
    copied = GaussianStatistics(stats.w.contiguous(), stats.x_q.contiguous(), stats.y_q,
                                stats.chi2, stats.z, stats.chol_x, stats.sigma, stats.n)
    model = LinearSelfAttention(3, LSAOptions(init_scale=0.5, init="random"),
                                make_generator(0, "init"), dtype=F64)
    with torch.no_grad():
        first = statistics_prediction(*weights(model), stats)
        second = statistics_prediction(*weights(model), copied)
    assert torch.allclose(first, second, rtol=1e-13, atol=1e-13)
