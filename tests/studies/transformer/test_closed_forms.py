"""The prefix closed forms against plain-numpy Monte Carlo (independent draws, lstsq/pinv)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclab.studies.transformer.closed_forms import (
    averaging_error,
    bayes_noiseless_error,
    least_squares_error,
)


def _monte_carlo(k: int, d: int, sigma: float, predictor: str, draws: int, seed: int
                 ) -> tuple[float, float]:
    """Mean and standard error of (yhat - y_q)^2 over ``draws`` prompts, drawn with numpy."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((draws, d))
    X = rng.standard_normal((draws, k, d))
    x_q = rng.standard_normal((draws, d))
    y = np.einsum("bkd,bd->bk", X, w) + sigma * rng.standard_normal((draws, k))
    y_q = np.einsum("bd,bd->b", x_q, w) + sigma * rng.standard_normal(draws)
    if predictor == "ols":
        w_hat = np.einsum("bdk,bk->bd", np.linalg.pinv(X), y)
    else:
        w_hat = np.einsum("bkd,bk->bd", X, y) / k
    errors = (np.einsum("bd,bd->b", x_q, w_hat) - y_q) ** 2
    return float(errors.mean()), float(errors.std(ddof=1) / math.sqrt(draws))


# (k, d, sigma): under- and overdetermined with noise (far enough from k = d that the error's
# variance is finite), and the noiseless curve on both sides of d
@pytest.mark.parametrize(("k", "d", "sigma"), [(2, 8, 0.5), (3, 10, 1.0), (14, 6, 0.5),
                                               (20, 5, 1.0), (3, 5, 0.0), (5, 5, 0.0),
                                               (9, 5, 0.0), (1, 5, 0.3)])
def test_least_squares_matches_monte_carlo(k: int, d: int, sigma: float) -> None:
    mean, se = _monte_carlo(k, d, sigma, "ols", 40_000, seed=k * 100 + d)
    exact = least_squares_error(k, d, sigma)
    assert abs(mean - exact) <= 4 * se + 1e-9 * d


@pytest.mark.parametrize(("k", "d", "sigma"), [(1, 3, 0.0), (4, 5, 0.0), (10, 5, 0.5),
                                               (20, 8, 1.0)])
def test_averaging_matches_monte_carlo(k: int, d: int, sigma: float) -> None:
    mean, se = _monte_carlo(k, d, sigma, "averaging", 40_000, seed=k * 7 + d)
    assert abs(mean - averaging_error(k, d, sigma)) <= 4 * se


def test_least_squares_diverges_next_to_d_with_noise_only() -> None:
    d = 6
    for k in (d - 1, d, d + 1):
        assert least_squares_error(k, d, 0.1) == math.inf
        assert least_squares_error(k, d, 0.0) == max(d - k, 0)
    # far from d the two sides are finite and large near it
    assert least_squares_error(d - 2, d, 0.1) == pytest.approx(2 + 0.01 * (d - 2) + 0.01)
    assert least_squares_error(d + 2, d, 0.1) == pytest.approx(0.01 * d + 0.01)


def test_empty_prompt_and_the_noiseless_bayes_curve() -> None:
    assert least_squares_error(0, 5, 0.5) == averaging_error(0, 5, 0.5) == 5.25
    assert [bayes_noiseless_error(k, 4) for k in range(7)] == [4, 3, 2, 1, 0, 0, 0]
    with pytest.raises(ValueError, match="k must be"):
        least_squares_error(-1, 3, 0.0)
    with pytest.raises(ValueError, match="sigma must be"):
        averaging_error(2, 3, math.nan)
