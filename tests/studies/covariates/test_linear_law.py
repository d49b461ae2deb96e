"""LinearLawTask: the law of its prompts, correlated positions, validation."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclab.studies.covariates.laws import parse_law
from iclab.studies.covariates.linear_law import (
    LinearLawTask,
    ar1_position_covariance,
    linear_family,
)
from iclab.tasks.covariance import symmetric_sqrt
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from tests.helpers import random_spd

F64 = torch.float64
SX = np.array([[1.5, 0.6, 0.0], [0.6, 1.0, -0.3], [0.0, -0.3, 0.5]])
SW = np.array([[0.8, 0.2, 0.1], [0.2, 1.2, 0.0], [0.1, 0.0, 0.6]])


def _mean_and_se(values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and standard error over the first axis."""
    return values.mean(0), values.std(0) / math.sqrt(values.shape[0])


def _statistics(task: LinearGaussian | LinearLawTask, seed: int, batch: int) -> torch.Tensor:
    """Per prompt: x_q x_q^T, y_q^2, x_1 y_1 y_2 x_2^T, y_1 y_q, x_1 x_1^T y_1^2: (B, k)."""
    p = task.sample_prompts(batch, make_generator(seed, "test-law-task"), torch.float64)
    x1, x2, y1, y2 = p.X[:, 0], p.X[:, 1], p.y[:, 0], p.y[:, 1]
    return torch.cat([
        (p.x_q[:, :, None] * p.x_q[:, None, :]).flatten(1),
        (p.y_q**2)[:, None],
        ((x1 * y1[:, None])[:, :, None] * (x2 * y2[:, None])[:, None, :]).flatten(1),
        (y1 * p.y_q)[:, None],
        (x1[:, :, None] * x1[:, None, :] * (y1**2)[:, None, None]).flatten(1),
    ], dim=1)


def test_gaussian_law_is_the_law_of_linear_gaussian() -> None:
    d, n, sigma, batch = 3, 4, 0.7, 80_000
    law_stats = _statistics(LinearLawTask(d, n, sigma, SX, SW), 0, batch)
    ref_stats = _statistics(LinearGaussian(d, n, sigma, SX, SW), 1, batch)
    m1, se1 = _mean_and_se(law_stats)
    m2, se2 = _mean_and_se(ref_stats)
    assert torch.all((m1 - m2).abs() <= 4 * torch.sqrt(se1**2 + se2**2))
    # and both match the exact moments: E[x x^T] = Sigma_x, E[y^2] = tr(Sx Sw) + sigma^2,
    # E[x_1 y_1 y_2 x_2^T] = Sx Sw Sx, E[y_1 y_q] = 0 (independent positions)
    exact = np.concatenate([SX.reshape(-1), [np.trace(SX @ SW) + sigma**2],
                            (SX @ SW @ SX).reshape(-1), [0.0]])
    k = exact.size
    assert torch.all((m1[:k] - torch.as_tensor(exact)).abs() <= 4 * se1[:k])


@pytest.mark.parametrize("spec", ["uniform", "laplace", "rademacher"])
def test_inputs_have_covariance_sigma_x_with_the_symmetric_root(spec: str) -> None:
    task = LinearLawTask(3, 2, 0.0, SX, law=parse_law(spec))
    x = task.sample_inputs(100_000, make_generator(0, "x"), torch.float64).reshape(-1, 3)
    mean, se = _mean_and_se((x[:, :, None] * x[:, None, :]).flatten(1))
    assert torch.all((mean - torch.as_tensor(SX.reshape(-1))).abs() <= 4 * se)
    # x = S z with S the symmetric root: S^{-1} x recovers the law's coordinates
    z = x @ torch.as_tensor(np.linalg.inv(symmetric_sqrt(SX)))
    if spec == "uniform":
        assert float(z.abs().max()) <= math.sqrt(3) + 1e-9
    if spec == "rademacher":
        assert torch.allclose(z.abs(), torch.ones_like(z), atol=1e-9)


def test_cholesky_would_not_recover_the_cube() -> None:
    """The check above has teeth: a lower Cholesky factor gives another law for uniform z."""
    z = parse_law("uniform").sample_standard((100_000, 3), make_generator(0, "z"), torch.float64)
    x = z @ torch.as_tensor(np.linalg.cholesky(SX)).T
    back = x @ torch.as_tensor(np.linalg.inv(symmetric_sqrt(SX)))
    assert float(back.abs().max()) > math.sqrt(3) + 0.1


def _position_covariances(task: LinearLawTask, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """Cov(x_i, x_j)[0, 0] / Sigma_x[0, 0] and its se for all positions: (n+1, n+1) each."""
    x = task.sample_inputs(batch, make_generator(3, "pos"), torch.float64)[:, :, 0]
    products = (x[:, :, None] * x[:, None, :]).flatten(1)
    mean, se = _mean_and_se(products)
    k = task.n + 1
    scale = task.sigma_x[0, 0]
    return mean.numpy().reshape(k, k) / scale, se.numpy().reshape(k, k) / scale


def test_ar1_positions_are_stationary_with_query_next() -> None:
    n, rho = 5, 0.6
    task = LinearLawTask(3, n, 0.5, SX, rho=rho)
    cov, se = _position_covariances(task, 100_000)
    exact = ar1_position_covariance(n, rho)
    assert np.all(np.abs(cov - exact) <= 4 * se)
    assert exact[n - 1, n] == pytest.approx(rho)                  # the query is the next position
    # and across coordinates: Cov(x_1, x_q) = rho^n Sigma_x
    x = task.sample_inputs(100_000, make_generator(4, "pos"), torch.float64)
    cross, cross_se = _mean_and_se((x[:, 0, :, None] * x[:, n, None, :]).flatten(1))
    assert torch.all((cross - torch.as_tensor(rho**n * SX.reshape(-1))).abs() <= 4 * cross_se)


def test_position_covariance_sets_cov_between_positions() -> None:
    n = 4
    R = random_spd(np.random.default_rng(5), n + 1)
    task = LinearLawTask(2, n, 0.5, SX[:2, :2], position_cov=R)
    cov, se = _position_covariances(task, 200_000)
    assert np.all(np.abs(cov - R) <= 4 * se)
    assert np.max(np.abs(cov - np.eye(n + 1))) > 10 * np.max(se)  # not independent


def test_rho_zero_draws_exactly_the_independent_prompts() -> None:
    a = LinearLawTask(3, 6, 0.5, SX, SW).sample_prompts(64, make_generator(0, "p"))
    b = LinearLawTask(3, 6, 0.5, SX, SW, rho=0.0).sample_prompts(64, make_generator(0, "p"))
    assert torch.equal(a.X, b.X) and torch.equal(a.y_q, b.y_q)


def test_prompts_are_reproducible_and_shaped() -> None:
    task = LinearLawTask(3, 6, 0.5, SX, SW, law=parse_law("laplace"))
    a = task.sample_prompts(16, make_generator(1, "p"))
    b = task.sample_prompts(16, make_generator(1, "p"))
    c = task.sample_prompts(16, make_generator(2, "p"))
    assert a.X.shape == (16, 6, 3) and a.y.shape == (16, 6) and a.x_q.shape == (16, 3)
    assert a.X.dtype == torch.float32
    assert torch.equal(a.X, b.X) and torch.equal(a.y, b.y) and not torch.equal(a.X, c.X)
    assert not task.correlated and np.array_equal(task.position_covariance, np.eye(7))


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_rho_outside_the_open_unit_interval_is_refused(rho: float) -> None:
    if math.isfinite(rho) and -1 < rho < 1:
        assert LinearLawTask(2, 3, 0.5, rho=rho).rho == rho
    else:
        with pytest.raises(ConfigError) as error:
            LinearLawTask(2, 3, 0.5, rho=rho)
        assert "\n" not in str(error.value)


@given(st.integers(0, 10_000), st.floats(0.05, 5.0))
def test_position_covariance_with_a_negative_eigenvalue_is_refused(seed: int,
                                                                   shift: float) -> None:
    rng = np.random.default_rng(seed)
    R = random_spd(rng, 4)
    smallest = float(np.linalg.eigvalsh(R)[0])
    bad = R - (smallest + shift) * np.eye(4)
    with pytest.raises(ConfigError, match="position covariance"):
        LinearLawTask(2, 3, 0.5, position_cov=bad)
    assert LinearLawTask(2, 3, 0.5, position_cov=R).correlated


@given(st.integers(1, 6).filter(lambda k: k != 4))
def test_position_covariance_of_the_wrong_size_is_refused(k: int) -> None:
    with pytest.raises(ConfigError, match="shape"):
        LinearLawTask(2, 3, 0.5, position_cov=np.eye(k))


def test_correlation_needs_the_gaussian_law_and_one_kind() -> None:
    with pytest.raises(ConfigError, match="gaussian"):
        LinearLawTask(2, 3, 0.5, law=parse_law("uniform"), rho=0.5)
    with pytest.raises(ConfigError, match="gaussian"):
        LinearLawTask(2, 3, 0.5, law=parse_law("laplace"), position_cov=np.eye(4))
    with pytest.raises(ConfigError, match="not both"):
        LinearLawTask(2, 3, 0.5, rho=0.5, position_cov=np.eye(4))
    with pytest.raises(ConfigError):
        LinearLawTask(0, 3, 0.5)


# --- the task as a part of the linear-gaussian family -----------------------------------------


def test_declared_capabilities() -> None:
    uniform = LinearLawTask(3, 4, 0.5, law=parse_law("uniform"))
    assert uniform.name == "linear-gaussian" and uniform.covariate_law.spec == "uniform"
    assert not uniform.statistics and not uniform.gaussian and uniform.sign_symmetric
    assert not uniform.rotation_invariant                    # a cube is not a sphere
    assert LinearLawTask(3, 4, 0.5, rho=0.4).rotation_invariant
    assert LinearLawTask(3, 4, 0.5, cov_w=2 * np.eye(3), rho=0.4).rotation_invariant
    assert not LinearLawTask(3, 4, 0.5, SX, rho=0.4).rotation_invariant
    assert not LinearLawTask(3, 4, 0.5, cov_w=SW, rho=0.4).rotation_invariant


@pytest.mark.parametrize("law", [{}, {"x_law": "gaussian"}])
def test_the_family_without_law_or_correlation_is_exactly_linear_gaussian(
        law: dict[str, str]) -> None:
    task = linear_family(3, 6, 0.5, SX, SW, **law)
    reference = LinearGaussian(3, 6, 0.5, SX, SW)
    assert type(task) is LinearGaussian
    assert np.array_equal(task.sigma_x, SX) and np.array_equal(task.sigma_w, SW)
    a = task.sample_prompts(32, make_generator(0, "p"))
    b = reference.sample_prompts(32, make_generator(0, "p"))
    assert torch.equal(a.X, b.X) and torch.equal(a.y_q, b.y_q)
    assert isinstance(linear_family(3, 6, 0.5, x_law="rademacher"), LinearLawTask)
    assert isinstance(linear_family(3, 6, 0.5, context_correlation=0.0), LinearLawTask)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_the_family_names_context_correlation_when_it_is_outside_the_unit_interval(
        rho: float) -> None:
    if math.isfinite(rho) and -1 < rho < 1:
        assert linear_family(2, 3, 0.5, context_correlation=rho).correlated
    else:
        with pytest.raises(ConfigError, match="context_correlation must be a number in") as error:
            linear_family(2, 3, 0.5, context_correlation=rho)
        assert "\n" not in str(error.value)


def test_the_family_refuses_what_does_not_combine() -> None:
    with pytest.raises(ConfigError, match=r"need x_law gaussian.*'uniform'"):
        linear_family(2, 3, 0.5, x_law="uniform", context_correlation=0.5)
    with pytest.raises(ConfigError, match="not both"):
        linear_family(2, 3, 0.5, context_correlation=0.5, context_covariance=np.eye(4))
    with pytest.raises(ConfigError, match=r"context_covariance: .*shape \(4, 4\)"):
        linear_family(2, 3, 0.5, context_covariance=np.eye(3))
    with pytest.raises(ConfigError, match=r"student-t needs 4 < NU <= 1e\+06"):
        linear_family(2, 3, 0.5, x_law="student-t:4")


def test_a_law_that_is_not_iid_keeps_its_coordinate_axis(tmp_path: Path) -> None:
    # Coordinate 0 is +-1 (mu4 = 1), the others N(0, 1) (mu4 = 3): E[x_k^4] tells them apart.
    (tmp_path / "mixed_law.py").write_text(
        "import torch\n"
        "def draw(shape, generator, dtype):\n"
        "    z = torch.randn(shape, generator=generator, dtype=dtype)\n"
        "    z[..., 0] = torch.randint(0, 2, shape[:-1], generator=generator).to(dtype) * 2 - 1\n"
        "    return z\n")
    task = LinearLawTask(3, 2, 0.0, law=parse_law(f"{tmp_path / 'mixed_law.py'}:draw"))
    x = task.sample_inputs(40_000, make_generator(0, "x"), torch.float64).reshape(-1, 3)
    fourth, se = _mean_and_se(x**4)
    assert torch.all((fourth - torch.tensor([1.0, 3.0, 3.0], dtype=F64)).abs() <= 4 * se + 1e-12)
