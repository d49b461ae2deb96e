"""The span optimum: features against LSA predictions, and against closed-form optima."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclab.algorithms.construct import lsa_from_gamma
from iclab.models.lsa.layer import LinearSelfAttention
from iclab.models.lsa.options import LSAOptions
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.tasks.nonlinear import ReluTask, anisotropic_task
from iclab.theory.gaussian import gaussian_optimum
from iclab.theory.rotation_invariant import relu_optimum
from iclab.theory.span import (
    MAX_D,
    _gamma_index,
    default_fit_prompts,
    feature_count,
    span_features,
    span_optimum,
)
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator


def _coefficients(model: LinearSelfAttention) -> np.ndarray:
    """theta with F theta = u^T Z M x_q: Z_ab (a < b) carries u_a M_bc + u_b M_ac."""
    u, M = (t.detach().double().numpy() for t in model.effective())
    d = model.d
    rows, cols = np.triu_indices(d + 1)
    theta = [
        u[a] * M[b, c] + (u[b] * M[a, c] if a != b else 0.0)
        for a, b in zip(rows, cols, strict=True) for c in range(d)
    ]
    return np.array(theta)


def test_feature_count() -> None:
    assert feature_count(1) == 3 and feature_count(5) == 105 and feature_count(8) == 360
    assert feature_count(3, query_cubic=True) == 30 + 10
    assert default_fit_prompts(2) == 200_000 and default_fit_prompts(8) == 1_000_000


def test_features_reproduce_any_lsa() -> None:
    task = LinearGaussian(3, 6, 0.4)
    prompts = task.sample_prompts(50, make_generator(0, "p"), torch.float64)
    model = LinearSelfAttention(3, LSAOptions(init_scale=1.0, init="random"),
                                make_generator(1, "m"), dtype=torch.float64)
    F = span_features(prompts).numpy()
    with torch.no_grad():
        yhat = model(prompts.X, prompts.y, prompts.x_q).numpy()
    np.testing.assert_allclose(F @ _coefficients(model), yhat, rtol=1e-10, atol=1e-10)


def test_cubic_features_span_the_attend_query_lsa() -> None:
    task = LinearGaussian(2, 4, 0.3)
    prompts = task.sample_prompts(200, make_generator(2, "p"), torch.float64)
    model = LinearSelfAttention(2, LSAOptions(attend_query=True, init_scale=1.0, init="random"),
                                make_generator(3, "m"), dtype=torch.float64)
    with torch.no_grad():
        yhat = model(prompts.X, prompts.y, prompts.x_q).numpy()
    for cubic, representable in ((True, True), (False, False)):
        F = span_features(prompts, query_cubic=cubic).numpy()
        theta, *_ = np.linalg.lstsq(F, yhat, rcond=None)
        residual = np.abs(F @ theta - yhat).max() / np.abs(yhat).max()
        assert (residual < 1e-9) == representable


def test_gamma_index_reads_the_gd_term() -> None:
    gamma = np.arange(9.0).reshape(3, 3) / 10
    model = lsa_from_gamma(gamma)
    np.testing.assert_allclose(_coefficients(model)[_gamma_index(3)], gamma, atol=1e-15)


def test_linear_gaussian_span_matches_the_closed_form() -> None:
    task = LinearGaussian(3, 8, 0.5)
    span = span_optimum(task, fit_prompts=150_000, test_prompts=100_000, seed=1)
    closed = gaussian_optimum(8, 0.5, d=3)
    assert abs(span.loss - closed.loss) <= 3 * span.loss_stderr
    assert np.max(np.abs(span.gamma - closed.gamma) / span.gamma_stderr) < 4.5
    assert abs(span.eta - closed.eta) <= 3 * span.eta_stderr
    assert span.isotropy_err < 0.02
    assert max(span.nuisance.values()) < 0.005
    # the fitted coefficients' estimation cost is about p / N of the loss, in-sample below
    ratio = span.estimation_excess / (span.features / span.fit_prompts * closed.loss)
    assert 0.5 < ratio < 2.0
    assert span.fit_loss < span.heldout_loss and span.loss < span.heldout_loss


def test_anisotropic_span_finds_the_non_isotropic_gamma() -> None:
    task = anisotropic_task(2, 6, 0.3)
    span = span_optimum(task, fit_prompts=100_000, test_prompts=80_000, seed=2)
    closed = gaussian_optimum(6, 0.3, task.sigma_x, task.sigma_w)
    assert np.max(np.abs(span.gamma - closed.gamma) / span.gamma_stderr) < 4.5
    assert span.isotropy_err > 0.3                    # diag(0.043, 0.111)-like: far from eta I
    assert abs(span.loss - closed.loss) <= 3 * span.loss_stderr


def test_relu_span_matches_the_closed_form() -> None:
    task = ReluTask(2, 6, 0.2)
    span = span_optimum(task, fit_prompts=100_000, test_prompts=80_000, seed=3)
    closed = relu_optimum(6, 2, 0.2)
    assert abs(span.loss - closed.loss) <= 3 * span.loss_stderr
    assert abs(span.eta - closed.eta) <= 3 * span.eta_stderr
    assert span.isotropy_err < 0.03


def test_span_is_seeded() -> None:
    task = LinearGaussian(1, 3, 0.1)
    a = span_optimum(task, fit_prompts=1000, test_prompts=500, seed=4)
    b = span_optimum(task, fit_prompts=1000, test_prompts=500, seed=4)
    c = span_optimum(task, fit_prompts=1000, test_prompts=500, seed=5)
    assert a.loss == b.loss and np.array_equal(a.coefficients, b.coefficients)
    assert a.loss != c.loss


def test_large_d_is_refused() -> None:
    with pytest.raises(ConfigError, match=f"limited to d <= {MAX_D}; got d=9"):
        span_optimum(LinearGaussian(MAX_D + 1, 3, 0.1))


@settings(max_examples=20, deadline=None)
@given(st.one_of(st.integers(-5, 299), st.integers(100_000_001, 10**12), st.just(True),
                 st.just(2.5)))
def test_bad_prompt_counts_are_refused(count: int) -> None:
    # d = 1: 3 features, so at least 300 fit prompts (100 per feature)
    with pytest.raises(ConfigError, match="fit_prompts must be an integer from 300 to"):
        span_optimum(LinearGaussian(1, 3, 0.1), fit_prompts=count)
