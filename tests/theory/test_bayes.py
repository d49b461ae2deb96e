"""The Bayes risk of linear Gaussian tasks (docs/theory.md section 7) against Monte Carlo."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from iclab.algorithms.baselines import BayesPosteriorMean, Ridge
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.bayes import bayes_risk
from iclab.theory.gaussian import gaussian_optimum, loss_star_isotropic
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from tests.helpers import random_spd


def monte_carlo_risk(task: LinearGaussian, algorithm: BayesPosteriorMean | Ridge, prompts: int,
                     seed: int) -> tuple[float, float]:
    batch = task.sample_prompts(prompts, make_generator(seed, "test-bayes"), torch.float64)
    errors = (algorithm(batch.X, batch.y, batch.x_q) - batch.y_q) ** 2
    return float(errors.mean()), float(errors.std()) / math.sqrt(prompts)


CASES = [  # d, n, sigma, non-isotropic covariances?
    (5, 10, 0.1, False),   # docs/theory.md: about 0.022, against 1.887 for one-step GD
    (4, 12, 0.7, True),
    (6, 3, 0.5, True),     # n < d
    (6, 3, 0.0, True),     # noiseless, n < d: the prior-metric interpolant
]


@pytest.mark.parametrize(("d", "n", "sigma", "general"), CASES)
def test_bayes_risk_against_monte_carlo_loss_of_the_posterior_mean(
    d: int, n: int, sigma: float, general: bool
) -> None:
    rng = np.random.default_rng(d + n)
    cov_x = random_spd(rng, d) if general else np.eye(d)
    cov_w = random_spd(rng, d) if general else np.eye(d)
    risk, risk_se = bayes_risk(n, sigma, cov_x, cov_w, prompts=20_000, seed=1)
    task = LinearGaussian(d, n, sigma, cov_x, cov_w)
    mean, stderr = monte_carlo_risk(task, BayesPosteriorMean(sigma, cov_w), 100_000, seed=2)
    assert abs(mean - risk) < 3 * math.hypot(stderr, risk_se)
    assert math.hypot(stderr, risk_se) < 0.02 * risk
    # one layer of LSA cannot reach it: the Bayes risk is below L*
    assert risk < gaussian_optimum(n, sigma, cov_x, cov_w).loss


def test_theory_md_numbers() -> None:
    risk, stderr = bayes_risk(10, 0.1, np.eye(5), np.eye(5), prompts=20_000, seed=0)
    assert risk == pytest.approx(0.022, abs=0.001)
    assert stderr < 0.001
    assert loss_star_isotropic(10, 5, 0.1) == pytest.approx(1.887, abs=5e-4)


def test_noiseless_risk_is_zero_once_n_reaches_d() -> None:
    risk, stderr = bayes_risk(5, 0.0, random_spd(np.random.default_rng(0), 5),
                              random_spd(np.random.default_rng(1), 5), prompts=2_000)
    assert risk == pytest.approx(0.0, abs=1e-9)
    assert stderr == pytest.approx(0.0, abs=1e-9)


def test_risk_falls_with_n_and_rises_with_sigma() -> None:
    cov = random_spd(np.random.default_rng(3), 4)
    by_n = [bayes_risk(n, 0.5, cov, np.eye(4), prompts=20_000)[0] for n in (2, 4, 8, 16)]
    assert all(a > b for a, b in itertools.pairwise(by_n))
    by_sigma = [bayes_risk(8, s, cov, np.eye(4), prompts=20_000)[0] for s in (0.1, 0.5, 1.0)]
    assert all(a < b for a, b in itertools.pairwise(by_sigma))


def test_reproducible_from_the_seed() -> None:
    first = bayes_risk(6, 0.3, np.eye(3), np.eye(3), prompts=3_000, seed=5)
    assert bayes_risk(6, 0.3, np.eye(3), np.eye(3), prompts=3_000, seed=5) == first
    assert bayes_risk(6, 0.3, np.eye(3), np.eye(3), prompts=3_000, seed=6) != first


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"n": 0}, "n must be an integer >= 1"), ({"sigma": -0.1}, "sigma must be a finite"),
     ({"sigma": float("nan")}, "sigma must be a finite"), ({"prompts": 1}, "prompts must be"),
     ({"sigma_x": np.diag([1.0, -1.0, 1.0])}, "positive definite"),
     ({"sigma_w": np.eye(2)}, "shape")],
)
def test_refuses_bad_input(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"n": 4, "sigma": 0.2, "sigma_x": np.eye(3),
                                    "sigma_w": np.eye(3), "prompts": 100}
    arguments.update(kwargs)
    with pytest.raises(ConfigError, match=message):
        bayes_risk(**arguments)  # type: ignore[arg-type]
