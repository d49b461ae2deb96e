"""Garg et al.'s shifts: the skewed covariance's spectrum, exact loss against Monte Carlo under
it, and the input shifts' geometry (one orthant, the opposite orthant, a query orthogonal to
the context) checked on the drawn prompts."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclab.studies.garg.input_shifts import InputShiftLaw, skewed_covariance
from iclab.studies.shift.laws import (
    GaussianTestLaw,
    check_value,
    input_shifted_law,
    parse_values,
    shifted_law,
)
from iclab.studies.shift.measure import evaluate_shift
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

pytestmark = pytest.mark.usefixtures("one_thread")


def test_skewed_covariance_spectrum() -> None:
    d = 6
    values = np.sort(np.linalg.eigvalsh(skewed_covariance(d, 2.0)))[::-1]
    expected = 1.0 / np.arange(1, d + 1) ** 2
    assert np.allclose(values, d * expected / expected.sum(), rtol=1e-10)
    assert np.allclose(skewed_covariance(d, 0.0), np.eye(d), atol=1e-12)
    law = shifted_law(LinearGaussian(d, 8, 0.5), "skewed-covariance", 2.0)
    assert np.allclose(law.cov_x, skewed_covariance(d, 2.0)) and np.allclose(law.cov_q,
                                                                             law.cov_x)


def test_skewed_exact_loss_agrees_with_monte_carlo() -> None:
    base = LinearGaussian(3, 6, 0.3)
    gamma = np.eye(3) / 10
    rows = evaluate_shift(lambda X, y, x_q: torch.zeros(len(x_q), dtype=X.dtype), None, base,
                          gamma, "skewed-covariance", [0.0, 2.0], 20_000, 0)
    for row in rows:
        assert abs(row["gd_loss"] - row["gd_exact_loss"]) < 4 * row["gd_loss_stderr"]
        # the zero predictor's loss is E (w^T x_q)^2 + sigma^2 = trace(cov_q) + 0.09 = 3.09
        assert abs(row["model_loss"] - 3.09) < 4 * row["model_loss_stderr"]


def test_orthant_shifts_fold_the_context_and_the_query() -> None:
    base = LinearGaussian(4, 10, 0.0)
    p = input_shifted_law(base, "orthant", 1.0).sample_prompts(64, make_generator(0, "s"),
                                                              torch.float64)
    signs = torch.sign(p.X)
    assert torch.all(signs == signs[:, :1])                      # one orthant per prompt
    assert torch.all(torch.sign(p.x_q) == -signs[:, 0])          # the query opposite
    w, *_ = np.linalg.lstsq(p.X[0].numpy(), p.y[0].numpy(), rcond=None)
    assert abs(float(p.x_q[0].numpy() @ w) - float(p.y_q[0])) < 1e-8   # same linear task
    q = input_shifted_law(base, "orthant-random", 1.0).sample_prompts(
        64, make_generator(0, "s"), torch.float64)
    assert torch.equal(q.X, p.X) and not torch.all(torch.sign(q.x_q) == -signs[:, 0])
    training = GaussianTestLaw.from_task(base).sample_prompts(64, make_generator(0, "s"),
                                                              torch.float64)
    unshifted = input_shifted_law(base, "orthant", 0.0).sample_prompts(
        64, make_generator(0, "s"), torch.float64)
    assert torch.equal(unshifted.X, training.X) and torch.equal(unshifted.y_q, training.y_q)


def test_orthogonal_query_is_orthogonal_with_its_norm_kept() -> None:
    base = LinearGaussian(6, 3, 0.0)
    law = input_shifted_law(base, "orthogonal-query", 1.0)
    p = law.sample_prompts(32, make_generator(1, "s"), torch.float64)
    training = GaussianTestLaw.from_task(base).sample_prompts(32, make_generator(1, "s"),
                                                              torch.float64)
    assert torch.allclose(p.X @ p.x_q[..., None], torch.zeros(32, 3, 1, dtype=torch.float64),
                          atol=1e-10)
    assert torch.allclose(p.x_q.norm(dim=1), training.x_q.norm(dim=1))
    with pytest.raises(ConfigError, match="needs fewer context examples than dimensions"):
        input_shifted_law(LinearGaussian(3, 3, 0.0), "orthogonal-query", 0.5)
    assert isinstance(law, InputShiftLaw) and law.sigma == 0.0 and law.n == 3


@pytest.mark.parametrize(("kind", "value"), [("orthant", 1.5), ("orthogonal-query", -0.1),
                                             ("skewed-covariance", 5.0)])
def test_bad_values_are_one_config_error(kind: str, value: float) -> None:
    with pytest.raises(ConfigError, match=f"shift {kind}: value"):
        check_value(kind, value, ("orthant", "orthogonal-query", "skewed-covariance"))


def test_input_kinds_only_where_asked() -> None:
    with pytest.raises(ConfigError, match="unknown shift kind 'orthant'"):
        parse_values("orthant", "0,1")                           # the exact kinds by default
    assert parse_values("orthant", "0,1", ("orthant",)) == [0.0, 1.0]
