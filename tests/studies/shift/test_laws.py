"""Shifted Gaussian test laws: the sampler's moments, each kind of shift, value validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclab.studies.shift.laws import (
    SHIFT_KINDS,
    GaussianTestLaw,
    check_value,
    parse_values,
    shifted_law,
)
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from tests.helpers import random_spd

F64 = torch.float64


def base_task(d: int = 3, n: int = 7, sigma: float = 0.6, seed: int = 0) -> LinearGaussian:
    rng = np.random.default_rng(seed)
    return LinearGaussian(d, n, sigma, random_spd(rng, d), random_spd(rng, d))


def general_law(d: int = 3, n: int = 5, seed: int = 1) -> GaussianTestLaw:
    rng = np.random.default_rng(seed)
    return GaussianTestLaw(d, n, 0.8, random_spd(rng, d), random_spd(rng, d),
                           random_spd(rng, d), rng.normal(size=d))


def within(sample: torch.Tensor, expected: np.ndarray | float, z: float = 4.0) -> bool:
    """Every entry of the sample mean (over dim 0) within z standard errors of ``expected``."""
    mean = sample.mean(0).numpy()
    stderr = (sample.std(0) / math.sqrt(sample.shape[0])).numpy()
    return bool(np.all(np.abs(mean - expected) <= z * stderr))


def test_shapes_and_seeding() -> None:
    law = general_law()
    a = law.sample_prompts(9, make_generator(3, "t"), F64)
    b = law.sample_prompts(9, make_generator(3, "t"), F64)
    c = law.sample_prompts(9, make_generator(4, "t"), F64)
    assert a.X.shape == (9, 5, 3) and a.y.shape == (9, 5)
    assert a.x_q.shape == (9, 3) and a.y_q.shape == (9,)
    assert all(t.dtype == F64 for t in (a.X, a.y, a.x_q, a.y_q))
    assert torch.equal(a.X, b.X) and torch.equal(a.y_q, b.y_q)
    assert not torch.equal(a.X, c.X)


def test_training_law_draws_the_training_prompts() -> None:
    """from_task, drawn from the same generator, gives LinearGaussian's own prompts."""
    task = base_task()
    ours = GaussianTestLaw.from_task(task).sample_prompts(50, make_generator(0, "t"), F64)
    theirs = task.sample_prompts(50, make_generator(0, "t"), F64)
    for a, b in ((ours.X, theirs.X), (ours.y, theirs.y), (ours.x_q, theirs.x_q),
                 (ours.y_q, theirs.y_q)):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_sampler_moments() -> None:
    """Second moments of the context, the query, and the labels' covariances with them."""
    law = general_law()
    p = law.sample_prompts(200_000, make_generator(0, "moments"), F64)
    S, Q, Omega, mu = law.cov_x, law.cov_q, law.cov_w, law.w_mean
    context = p.X[:, 0]
    assert within(torch.einsum("bi,bj->bij", context, context).reshape(-1, 9), S.ravel())
    assert within(torch.einsum("bi,bj->bij", p.x_q, p.x_q).reshape(-1, 9), Q.ravel())
    # E[x_q y_q] = Q mu, E[x_i y_i] = S mu, E[y_q^2] = tr(Q (Omega + mu mu^T)) + sigma^2.
    assert within(p.x_q * p.y_q[:, None], Q @ mu)
    assert within(context * p.y[:, :1], S @ mu)
    second = float(np.trace(Q @ (Omega + np.outer(mu, mu)))) + law.sigma**2
    assert within(p.y_q[:, None] ** 2, second)
    # and not the training-law answer: the query's covariance differs from the context's.
    assert not within(torch.einsum("bi,bj->bij", p.x_q, p.x_q).reshape(-1, 9), S.ravel())


@pytest.mark.parametrize(
    ("kind", "value"),
    [("n", 11), ("sigma", 1.7), ("x-scale", 2.5), ("query-scale", 0.4), ("w-scale", 3.0),
     ("w-mean", -1.5)],
)
def test_each_kind_changes_only_its_part(kind: str, value: float) -> None:
    task = base_task()
    law = shifted_law(task, kind, value)
    S, Omega = task.sigma_x, task.sigma_w
    expected = {
        "n": task.n, "sigma": task.sigma, "cov_x": S, "cov_q": S, "cov_w": Omega,
        "w_mean": np.zeros(task.d),
    }
    if kind == "n":
        expected["n"] = 11
    elif kind == "sigma":
        expected["sigma"] = 1.7
    elif kind == "x-scale":
        expected["cov_x"], expected["cov_q"] = 6.25 * S, 6.25 * S
    elif kind == "query-scale":
        expected["cov_q"] = 0.16 * S
    elif kind == "w-scale":
        expected["cov_w"] = 9.0 * Omega
    else:
        expected["w_mean"] = np.full(3, -1.5 / math.sqrt(3))
    for name, target in expected.items():
        np.testing.assert_allclose(getattr(law, name), target, rtol=1e-14)
    assert isinstance(law.n, int)


def test_w_mean_has_the_given_norm() -> None:
    law = shifted_law(base_task(d=4), "w-mean", 2.5)
    assert np.linalg.norm(law.w_mean) == pytest.approx(2.5, rel=1e-14)
    assert np.ptp(law.w_mean) == 0.0


@pytest.mark.parametrize("kind", SHIFT_KINDS)
def test_neutral_value_is_the_training_law(kind: str) -> None:
    task = base_task()
    neutral = {"n": task.n, "sigma": task.sigma, "w-mean": 0.0,
               "skewed-covariance": 0.0}.get(kind, 1.0)
    law = shifted_law(task, kind, neutral)
    train = GaussianTestLaw.from_task(task)
    assert (law.n, law.sigma) == (train.n, train.sigma)
    for name in ("cov_x", "cov_q", "cov_w", "w_mean"):
        np.testing.assert_array_equal(getattr(law, name), getattr(train, name))


ALLOWED = {  # the documented ranges (the module's table), written out independently
    "n": lambda v: float(v).is_integer() and 1 <= v <= 1_000_000,
    "sigma": lambda v: 0 <= v <= 1e4,
    "x-scale": lambda v: 1e-4 <= v <= 1e4,
    "query-scale": lambda v: 1e-4 <= v <= 1e4,
    "w-scale": lambda v: 1e-4 <= v <= 1e4,
    "w-mean": lambda v: -1e4 <= v <= 1e4,
    "skewed-covariance": lambda v: 0 <= v <= 4,
}


@given(kind=st.sampled_from(SHIFT_KINDS),
       value=st.one_of(st.floats(-1e3, 1e3), st.integers(-5, 200), st.floats(-1e308, 1e308),
                       st.sampled_from([math.nan, math.inf, -math.inf, 0.0, 1.0, 2.5, 1e-4,
                                        1e4, 1e4 * (1 + 1e-15), 1e6, 1e6 + 1, 1e200, 1e308,
                                        -1e200, 1e-200])))
def test_check_value_accepts_exactly_the_allowed(kind: str, value: float) -> None:
    allowed = math.isfinite(value) and ALLOWED[kind](value)
    if allowed:
        checked = check_value(kind, value)
        assert checked == value and isinstance(checked, int) == (kind == "n")
    else:
        with pytest.raises(ConfigError) as error:
            check_value(kind, value)
        message = str(error.value)
        assert "\n" not in message and kind in message and repr(value) in message


@given(st.text(min_size=1, max_size=12).filter(lambda s: s not in SHIFT_KINDS))
def test_unknown_kind_is_refused(kind: str) -> None:
    with pytest.raises(ConfigError, match="unknown shift kind") as error:
        shifted_law(base_task(), kind, 1.0)
    assert "x-scale" in str(error.value) and "\n" not in str(error.value)


def test_bools_and_extreme_values_are_refused_up_front() -> None:
    with pytest.raises(ConfigError):
        check_value("n", True)
    for kind, text in (("x-scale", "1e-200"), ("x-scale", "1e200"), ("w-mean", "0,1e200"),
                       ("sigma", "1e308"), ("n", "1e308")):
        with pytest.raises(ConfigError, match=f"shift {kind}: value .* is not allowed"):
            parse_values(kind, text)


def test_parse_values() -> None:
    assert parse_values("x-scale", "0.5, 1,2,4") == [0.5, 1.0, 2.0, 4.0]
    assert parse_values("n", "5,20,80") == [5.0, 20.0, 80.0]
    assert parse_values("w-mean", "-1,0,2.5") == [-1.0, 0.0, 2.5]
    for kind, text in [("x-scale", "0.5,,2"), ("x-scale", ""), ("x-scale", "a,1"),
                       ("x-scale", "0,1"), ("n", "5,5.5"), ("sigma", "-0.1"),
                       ("w-scale", "1,1"), ("n", "nan"), ("bogus", "1")]:
        with pytest.raises(ConfigError) as error:
            parse_values(kind, text)
        assert "\n" not in str(error.value)


def test_law_validation() -> None:
    good = general_law()
    with pytest.raises(ConfigError, match="w_mean"):
        GaussianTestLaw(3, 5, 0.5, good.cov_x, good.cov_q, good.cov_w, np.zeros(2))
    with pytest.raises(ConfigError, match="w_mean"):
        GaussianTestLaw(3, 5, 0.5, good.cov_x, good.cov_q, good.cov_w, np.array([0, np.nan, 0]))
    with pytest.raises(ConfigError, match="cov_q"):
        GaussianTestLaw(3, 5, 0.5, good.cov_x, -good.cov_q, good.cov_w, np.zeros(3))
    with pytest.raises(ConfigError, match="n must be"):
        GaussianTestLaw(3, 0, 0.5, good.cov_x, good.cov_q, good.cov_w, np.zeros(3))
    with pytest.raises(ConfigError, match="sigma must be"):
        GaussianTestLaw(3, 5, -0.5, good.cov_x, good.cov_q, good.cov_w, np.zeros(3))
