"""The Bayes risk of shifted test laws (a query law of its own, a task law off centre) and the
rows of ``shifted_optimum_rows``, against an independent numpy Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest

from iclab.studies.covariates.linear_law import linear_family
from iclab.studies.shift.optimum import shifted_optimum_rows
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.errors import ConfigError


def posterior_mean_loss(d: int, n: int, sigma: float, query_scale: float, w_shift: float,
                        prompts: int) -> tuple[float, float]:
    """Mean squared error of the posterior mean on whole prompts drawn here: x_i ~ N(0, I),
    x_q ~ N(0, c^2 I), w ~ N(m 1/sqrt(d), I), the posterior mean mu + (X^T X + sigma^2 I)^-1
    X^T (y - X mu) (prior mean mu)."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((prompts, n, d))
    mean = np.full(d, w_shift / np.sqrt(d))
    w = rng.standard_normal((prompts, d)) + mean
    y = np.einsum("bnd,bd->bn", X, w) + sigma * rng.standard_normal((prompts, n))
    x_q = query_scale * rng.standard_normal((prompts, d))
    y_q = (x_q * w).sum(-1) + sigma * rng.standard_normal(prompts)
    gram = np.einsum("bni,bnj->bij", X, X) + sigma**2 * np.eye(d)
    residual = y - X @ mean
    w_hat = mean + np.linalg.solve(gram, np.einsum("bnd,bn->bd", X, residual)[..., None])[..., 0]
    errors = ((x_q * w_hat).sum(-1) - y_q) ** 2
    return float(errors.mean()), float(errors.std(ddof=1) / np.sqrt(prompts))


@pytest.mark.parametrize("n", [3, 12])              # both forms of the posterior covariance
def test_bayes_loss_of_query_and_mean_shifts_against_whole_prompts(n: int) -> None:
    task = LinearGaussian(5, n, 0.7)
    query = shifted_optimum_rows(task, "query-scale", [2.0], bayes_prompts=20_000)[0]
    mean = shifted_optimum_rows(task, "w-mean", [3.0], bayes_prompts=20_000)[0]
    for row, (scale, shift) in ((query, (2.0, 0.0)), (mean, (1.0, 3.0))):
        expected, stderr = posterior_mean_loss(5, n, 0.7, scale, shift, 200_000)
        assert row.bayes_loss is not None and row.bayes_loss_stderr is not None
        assert abs(row.bayes_loss - expected) <= 4 * np.hypot(stderr, row.bayes_loss_stderr)


def test_no_bayes_loss_when_not_asked_and_refusals() -> None:
    row = shifted_optimum_rows(LinearGaussian(2, 4, 0.5), "sigma", [0.0], bayes_prompts=0)[0]
    assert row.bayes_loss is None and row.ratio is None and row.lsa_loss > 0
    with pytest.raises(ConfigError, match="needs a linear Gaussian"):
        shifted_optimum_rows(linear_family(2, 4, 0.5, x_law="uniform"), "n", [3])
    with pytest.raises(ConfigError, match="at least one value"):
        shifted_optimum_rows(LinearGaussian(2, 4, 0.5), "n", [])
