"""The relu (X^T y, x_q, y_q) sampler: exact identities per prompt, closed-form moments, and the
law of whole prompts seen through the nuisance-free LSA's loss."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclab.tasks.nonlinear import ReluTask
from iclab.tasks.relu_xy_statistics import draw_relu_xy, sample_relu_xy_statistics
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

F64 = torch.float64
SIZES = [(1, 3, 0.2), (2, 1, 0.0), (2, 1, 0.4), (3, 2, 0.3), (4, 5, 0.5), (5, 20, 0.0),
         (2, 7, 1.0)]

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.mark.parametrize(("d", "n"), [(1, 1), (2, 1), (3, 2), (5, 20), (4, 40)])
def test_noiseless_prompts_satisfy_the_relu_identities_exactly(d: int, n: int) -> None:
    """With sigma = 0, u^T X^T y = sum_i t_i relu(t_i) = |y|^2 >= 0 and y_q = relu(u^T x_q)."""
    stats, u = draw_relu_xy(d, n, 0.0, 256, make_generator(d + n, "exact"), F64)
    along = (u.T * stats.xy).sum(-1)
    assert torch.all(along >= 0)
    torch.testing.assert_close(stats.y_q, (u.T * stats.x_q).sum(-1).relu(), rtol=0, atol=1e-12)
    # the part of X^T y orthogonal to u has the length of |y| times a chi_(d-1): not zero
    # where d > 1, and exactly zero where d = 1
    rest = (stats.xy - along[:, None] * u.T).norm(dim=-1)
    assert (float(rest.max()) < 1e-10) == (d == 1)


def test_the_identity_fails_with_noise() -> None:
    stats, u = draw_relu_xy(3, 10, 0.5, 512, make_generator(0, "noisy"), F64)
    gap = ((u.T * stats.x_q).sum(-1).relu() - stats.y_q).abs()
    assert float(gap.median()) > 0.1


@pytest.mark.parametrize(("d", "n", "sigma"), SIZES)
def test_moments_match_the_closed_form(d: int, n: int, sigma: float) -> None:
    """E X^T y = 0, E |X^T y|^2 = n (3/2 + (d-1)/2 + d sigma^2) + n (n-1)/4 (given u,
    E relu(u.x) x = u/2), E y_q = 1/sqrt(2 pi), E y_q^2 = 1/2 + sigma^2, E x_q y_q = 0."""
    count = 200_000
    stats = sample_relu_xy_statistics(d, n, sigma, count, make_generator(7, "xy"), F64)
    features = torch.cat([stats.xy, stats.xy.square().sum(-1, keepdim=True),
                          stats.y_q[:, None], stats.y_q[:, None].square(),
                          stats.x_q * stats.y_q[:, None]], 1)
    expected = torch.cat([
        torch.zeros(d, dtype=F64),
        torch.tensor([n * (1.5 + (d - 1) / 2 + d * sigma**2) + n * (n - 1) / 4,
                      1 / math.sqrt(2 * math.pi), 0.5 + sigma**2], dtype=F64),
        torch.zeros(d, dtype=F64),
    ])
    se = features.std(0) / math.sqrt(count)
    assert torch.all((features.mean(0) - expected).abs() <= 4.5 * se + 1e-12)


@pytest.mark.parametrize(("d", "n", "sigma"), SIZES)
def test_the_nuisance_free_loss_has_the_law_of_whole_prompts(d: int, n: int,
                                                              sigma: float) -> None:
    """For fixed random (u_y, M_x), (u_y (X^T y)^T M_x x_q - y_q)^2 has the same mean on
    sampled statistics and on whole prompts (fourth moments of X^T y and x_q with y_q)."""
    count = 200_000
    stats = sample_relu_xy_statistics(d, n, sigma, count, make_generator(1, "xy"), F64)
    prompts = ReluTask(d, n, sigma).sample_prompts(count, make_generator(2, "whole"), F64)
    xy_whole = torch.einsum("bnd,bn->bd", prompts.X, prompts.y)
    generator = torch.Generator().manual_seed(d * 10 + n)
    for _ in range(3):
        M = torch.randn(d, d, generator=generator, dtype=F64) / n
        a = ((stats.xy * (stats.x_q @ M.T)).sum(-1) - stats.y_q).square()
        b = ((xy_whole * (prompts.x_q @ M.T)).sum(-1) - prompts.y_q).square()
        se = math.sqrt(float(a.var() + b.var()) / count)
        assert abs(float(a.mean() - b.mean())) < 4.5 * se


def test_the_same_generator_gives_the_same_bits_and_another_step_others() -> None:
    task = ReluTask(4, 9, 0.3)
    first = task.sample_xy_statistics(64, make_generator(3, "train", 5))
    again = task.sample_xy_statistics(64, make_generator(3, "train", 5))
    other = task.sample_xy_statistics(64, make_generator(3, "train", 6))
    assert torch.equal(first.xy, again.xy) and torch.equal(first.y_q, again.y_q)
    assert not torch.equal(first.xy, other.xy)
    assert first.xy.dtype == torch.float32 and first.xy.shape == (64, 4)
    assert first.x_q.shape == (64, 4) and first.y_q.shape == (64,) and first.n == 9
    assert first.batch == 64


@settings(max_examples=25, deadline=None)
@given(batch=st.one_of(st.integers(max_value=0), st.booleans(), st.floats(1.0, 9.0)))
def test_a_bad_batch_is_refused(batch: object) -> None:
    with pytest.raises(ConfigError, match="batch must be an integer >= 1"):
        sample_relu_xy_statistics(3, 5, 0.1, batch, make_generator(0, "x"))  # type: ignore[arg-type]
