"""A Monte Carlo mean drawn to a stated standard error (iclab.theory.sized_mean), and the Bayes
risk drawn that way against the fixed-count Monte Carlo and the posterior mean's loss."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclab.algorithms.baselines import BayesPosteriorMean
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.bayes import BLOCK_PROMPTS, bayes_risk_to_stderr
from iclab.theory.sized_mean import mean_to_stderr, means_to_stderr
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from tests.helpers import random_spd


class NormalBlocks:
    """Block k: 200 draws of N(mean, sd^2) from a generator seeded by k; remembers the
    blocks asked for."""

    def __init__(self, mean: float, sd: float, size: int = 200) -> None:
        self.mean, self.sd, self.size, self.asked = mean, sd, size, []

    def __call__(self, block: int) -> np.ndarray:
        self.asked.append(block)
        rng = np.random.default_rng([7, block])
        return rng.normal(self.mean, self.sd, self.size)


def test_draws_about_the_count_the_target_needs_and_reaches_it() -> None:
    blocks = NormalBlocks(1.0, 2.0)
    sized = mean_to_stderr(blocks, target=0.05)
    needed = (2.0 / 0.05) ** 2  # 1600 draws for a standard error of 0.05
    assert sized.reached and sized.stderr <= 0.05 < 1.2 * sized.stderr
    assert 0.8 * needed <= sized.draws <= 1.6 * needed
    assert abs(sized.mean - 1.0) < 4 * 0.05
    assert blocks.asked == list(range(len(blocks.asked)))  # blocks 0, 1, ... each once


def test_a_relative_target_is_read_against_the_mean() -> None:
    sized = mean_to_stderr(NormalBlocks(10.0, 2.0), relative=0.002)
    assert sized.target == pytest.approx(0.002 * sized.mean)
    assert sized.stderr <= sized.target and sized.draws >= 0.8 * (2.0 / 0.02) ** 2


def test_the_same_blocks_for_the_same_seed_and_a_tighter_target_extends_them() -> None:
    loose, tight = NormalBlocks(0.0, 1.0), NormalBlocks(0.0, 1.0)
    first = mean_to_stderr(loose, target=0.05)
    assert mean_to_stderr(NormalBlocks(0.0, 1.0), target=0.05) == first
    mean_to_stderr(tight, target=0.02)
    assert tight.asked[:len(loose.asked)] == loose.asked and len(tight.asked) > len(loose.asked)


def test_the_bound_on_blocks_holds_and_says_the_target_was_not_reached() -> None:
    sized = mean_to_stderr(NormalBlocks(0.0, 1.0), target=0.001, most=5)
    assert sized.draws == 5 * 200 and not sized.reached and sized.stderr > 0.001


def test_constant_values_stop_after_the_first_blocks() -> None:
    blocks = NormalBlocks(0.0, 0.0)
    sized = mean_to_stderr(blocks, relative=0.01, first=3)
    assert (sized.mean, sized.stderr, sized.draws, sized.reached) == (0.0, 0.0, 600, True)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({}, "exactly one of target and relative"),
    ({"target": 0.1, "relative": 0.1}, "exactly one of target and relative"),
    ({"target": 0.0}, "finite number > 0, got 0.0"),
    ({"relative": math.nan}, "finite number > 0, got nan"),
    ({"target": 0.1, "first": 3, "most": 2}, "first=3, most=2"),
])
def test_refuses_bad_targets(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        mean_to_stderr(NormalBlocks(0.0, 1.0), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("d", "n", "sigma"), [(5, 20, 0.5), (6, 3, 0.5)])
def test_sized_bayes_risk_against_the_posterior_mean_s_loss(d: int, n: int,
                                                            sigma: float) -> None:
    rng = np.random.default_rng(d * n)
    cov_x, cov_w = random_spd(rng, d), random_spd(rng, d)
    sized = bayes_risk_to_stderr(n, sigma, cov_x, cov_w, relative=0.002, seed=3)
    assert sized.reached and sized.stderr <= 0.002 * sized.mean
    assert sized.draws % BLOCK_PROMPTS == 0 and sized.draws < 200_000
    task = LinearGaussian(d, n, sigma, cov_x, cov_w)
    batch = task.sample_prompts(100_000, make_generator(4, "test-sized-bayes"), torch.float64)
    errors = (BayesPosteriorMean(sigma, cov_w)(batch.X, batch.y, batch.x_q) - batch.y_q) ** 2
    mean, stderr = float(errors.mean()), float(errors.std()) / math.sqrt(errors.numel())
    assert abs(mean - sized.mean) < 4 * math.hypot(stderr, sized.stderr)


def test_sized_bayes_risk_is_exactly_zero_without_noise_once_n_reaches_d() -> None:
    sized = bayes_risk_to_stderr(6, 0.0, np.eye(4), np.eye(4), relative=0.01)
    assert (sized.mean, sized.stderr, sized.draws) == (0.0, 0.0, 0)


def test_means_drawn_together_go_on_until_the_noisier_reaches_its_target() -> None:
    def blocks(block: int) -> np.ndarray:
        rng = np.random.default_rng([11, block])
        return np.stack([rng.normal(0.0, 1.0, 100), rng.normal(5.0, 3.0, 100)], axis=1)

    quiet, noisy = means_to_stderr(blocks, target=0.1)
    assert quiet.draws == noisy.draws >= 0.8 * (3.0 / 0.1) ** 2  # the noisy column's count
    assert quiet.reached and noisy.reached and noisy.stderr <= 0.1 < 1.2 * noisy.stderr
    assert quiet.stderr < 0.5 * noisy.stderr
    assert abs(noisy.mean - 5.0) < 4 * 0.1 and abs(quiet.mean) < 4 * quiet.stderr
