"""The relu Z sampler: exact identities per prompt, closed-form moments, and the law of whole
prompts seen through the LSA's prediction."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclab.tasks.nonlinear import ReluTask
from iclab.tasks.relu_statistics import draw_relu_z, relu_context_sums, sample_relu_z_statistics
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from tests.helpers import z_statistics_of

F64 = torch.float64
SIZES = [(1, 3, 0.2), (2, 1, 0.0), (2, 1, 0.4), (3, 2, 0.3), (4, 5, 0.5), (5, 20, 0.0), (2, 7, 1.0)]


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.mark.parametrize(("d", "n"), [(1, 1), (2, 1), (3, 2), (5, 3), (5, 20), (4, 40)])
def test_noiseless_prompts_satisfy_the_relu_identities_exactly(d: int, n: int) -> None:
    """With sigma = 0 each context label is relu(u.x_i), so u^T Z_xy = sum_i t_i relu(t_i)
    = sum_i relu(t_i)^2 = Z_yy, u^T Z_xx u = sum_i t_i^2 >= Z_yy, and y_q = relu(u^T x_q)."""
    stats, u = draw_relu_z(d, n, 0.0, 4096, make_generator(d * 100 + n, "identities"), F64)
    Z = stats.Z
    assert torch.allclose(u.square().sum(0), torch.ones(4096, dtype=F64))
    uZxy = (u.T * Z[:, :d, d]).sum(-1)
    torch.testing.assert_close(uZxy, Z[:, d, d], rtol=1e-10, atol=1e-10)
    uZu = torch.einsum("ib,bij,jb->b", u, Z[:, :d, :d], u)
    assert torch.all(uZu >= Z[:, d, d] - 1e-10)
    torch.testing.assert_close(stats.y_q, (u.T * stats.x_q).sum(-1).relu(), rtol=0, atol=1e-12)
    torch.testing.assert_close(Z, Z.transpose(1, 2), rtol=0, atol=0)
    eigenvalues = torch.linalg.eigvalsh(Z)
    assert eigenvalues.min() > -1e-9 * eigenvalues.max()
    if n < d + 1:  # a sum of n outer products has rank n
        assert torch.all(eigenvalues[:, : d + 1 - n].abs() < 1e-9 * eigenvalues.max())


def test_the_identity_fails_with_noise() -> None:
    """The check above can fail: with sigma > 0, u^T Z_xy and Z_yy differ."""
    stats, u = draw_relu_z(3, 10, 0.5, 512, make_generator(0, "noisy"), F64)
    gap = ((u.T * stats.Z[:, :3, 3]).sum(-1) - stats.Z[:, 3, 3]).abs()
    assert float(gap.median()) > 0.1


@pytest.mark.parametrize(("d", "n", "sigma"), SIZES)
def test_moments_match_the_closed_form(d: int, n: int, sigma: float) -> None:
    """E Z_xx = n I, E Z_xy = 0, E Z_yy = n (1/2 + sigma^2), E y_q = 1/sqrt(2 pi),
    E y_q^2 = 1/2 + sigma^2, E x_q y_q = 0 (x ~ N(0, I), u uniform on the sphere)."""
    count = 200_000
    stats = sample_relu_z_statistics(d, n, sigma, count, make_generator(7, "moments"), F64)
    Z = stats.Z
    features = torch.cat([
        Z[:, :d, :d].reshape(count, -1), Z[:, :d, d], Z[:, d, d, None],
        stats.y_q[:, None], stats.y_q[:, None].square(), stats.x_q * stats.y_q[:, None],
    ], 1)
    expected = torch.cat([
        n * torch.eye(d, dtype=F64).reshape(-1), torch.zeros(d, dtype=F64),
        torch.tensor([n * (0.5 + sigma**2), 1 / math.sqrt(2 * math.pi), 0.5 + sigma**2],
                     dtype=F64),
        torch.zeros(d, dtype=F64),
    ])
    se = features.std(0) / math.sqrt(count)
    assert torch.all((features.mean(0) - expected).abs() <= 4.5 * se + 1e-12)


def whole_prompt_z(task: ReluTask, count: int, seed: int) -> tuple[torch.Tensor, ...]:
    prompts = task.sample_prompts(count, make_generator(seed, "whole"), F64)
    stats = z_statistics_of(prompts)
    return stats.Z, stats.x_q, stats.y_q


@pytest.mark.parametrize(("d", "n", "sigma"), SIZES)
def test_the_lsa_loss_has_the_law_of_whole_prompts(d: int, n: int, sigma: float) -> None:
    """For fixed random (u, M), (u^T Z M x_q - y_q)^2 (fourth moments of Z and x_q jointly
    with y_q) has the same mean on sampled statistics and on whole prompts."""
    count = 200_000
    stats = sample_relu_z_statistics(d, n, sigma, count, make_generator(1, "z"), F64)
    Z_whole, x_q, y_q = whole_prompt_z(ReluTask(d, n, sigma), count, 2)
    generator = torch.Generator().manual_seed(d * 10 + n)
    for _ in range(3):
        u = torch.randn(d + 1, generator=generator, dtype=F64)
        M = torch.randn(d + 1, d, generator=generator, dtype=F64) / n
        a = (torch.einsum("i,bij,jk,bk->b", u, stats.Z, M, stats.x_q) - stats.y_q).square()
        b = (torch.einsum("i,bij,jk,bk->b", u, Z_whole, M, x_q) - y_q).square()
        se = math.sqrt(float(a.var() + b.var()) / count)
        assert abs(float(a.mean() - b.mean())) < 4.5 * se


def test_the_same_generator_gives_the_same_bits_and_another_step_others() -> None:
    task = ReluTask(4, 9, 0.3)
    first = task.sample_z_statistics(64, make_generator(3, "train", 5))
    again = task.sample_z_statistics(64, make_generator(3, "train", 5))
    other = task.sample_z_statistics(64, make_generator(3, "train", 6))
    assert torch.equal(first.Z, again.Z) and torch.equal(first.y_q, again.y_q)
    assert not torch.equal(first.Z, other.Z)
    assert first.Z.dtype == torch.float32 and first.Z.shape == (64, 5, 5)
    assert first.x_q.shape == (64, 4) and first.y_q.shape == (64,) and first.n == 9


@settings(max_examples=25, deadline=None)
@given(batch=st.one_of(st.integers(max_value=0), st.booleans(), st.floats(1.0, 9.0)))
def test_a_bad_batch_is_refused(batch: object) -> None:
    with pytest.raises(ConfigError, match="batch must be an integer >= 1"):
        sample_relu_z_statistics(3, 5, 0.1, batch, make_generator(0, "x"))  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [1, 3, 20, 64, 65, 100])
def test_context_sums_have_the_law_of_n_projections(n: int) -> None:
    """plus = sum relu(t_i)^2 and minus = sum min(t_i, 0)^2 for t ~ N(0, I_n): E plus = n/2,
    E plus^2 = 3n/2 + n(n-1)/4, E plus minus = n(n-1)/4, P(plus = 0) = 2^-n; the noise's
    chi2_(n-2) has mean n - 2 (both branches for the number of positives: n <= 64 and
    n > 64)."""
    count = 200_000
    plus, minus, chi2 = relu_context_sums(n, True, count, make_generator(n, "sums"), F64)
    features = torch.stack([plus, minus, plus.square(), plus * minus], 1)
    expected = torch.tensor([n / 2, n / 2, 1.5 * n + n * (n - 1) / 4, n * (n - 1) / 4],
                            dtype=F64)
    se = features.std(0) / math.sqrt(count)
    assert torch.all((features.mean(0) - expected).abs() <= 4.5 * se), \
        f"{features.mean(0)} {expected}"
    none_positive, p = float((plus == 0).to(F64).mean()), 2.0**-n
    assert abs(none_positive - p) <= 4.5 * math.sqrt(p * (1 - p) / count) + 1 / count
    assert torch.all(minus[plus == 0] > 0) and torch.all(plus[minus == 0] > 0)
    if n > 2:
        assert chi2 is not None and abs(float(chi2.mean()) - (n - 2)) < 4.5 * float(
            chi2.std()) / math.sqrt(count)
    else:
        assert chi2 is None
    assert relu_context_sums(n, False, 4, make_generator(0, "s"))[2] is None
