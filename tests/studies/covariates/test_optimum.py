"""The optimum for any covariate law: closed form against independent computations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclab.studies.covariates.laws import UserLaw, parse_law
from iclab.studies.covariates.linear_law import LinearLawTask
from iclab.studies.covariates.optimum import (
    covariate_optimum,
    estimate_fourth_moment,
    product_fourth_moment,
)
from iclab.tasks.covariance import symmetric_sqrt
from iclab.theory.gaussian import gaussian_optimum
from iclab.theory.span import span_optimum
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from tests.helpers import random_spd
from tests.theory.gamma_fit import fit_gamma, gd_features, mc_loss

SX = np.array([[1.5, 0.6, 0.0], [0.6, 1.0, -0.3], [0.0, -0.3, 0.5]])
SW = np.array([[0.8, 0.2, 0.1], [0.2, 1.2, 0.0], [0.1, 0.0, 0.6]])
# Standardised fourth moments from the textbooks (kurtosis): checked against the densities by
# quadrature in tests/tasks/test_covariate_laws.py.
KURTOSIS = {"gaussian": 3.0, "uniform": 1.8, "rademacher": 1.0, "laplace": 6.0,
            "student-t:5": 9.0}


def _tensor_moment(S: np.ndarray, A: np.ndarray, mu4: float) -> np.ndarray:
    """E[x x^T A x x^T], x = S z, from the raw fourth-moment tensor of z (iid coordinates)."""
    d = len(S)
    eye = np.eye(d)
    T = (np.einsum("ab,ce->abce", eye, eye) + np.einsum("ac,be->abce", eye, eye)
         + np.einsum("ae,bc->abce", eye, eye))
    for a in range(d):
        T[a, a, a, a] = mu4
    return np.asarray(np.einsum("ia,jb,ce,abce->ij", S, S, S @ A @ S, T))


def _enumerated_rademacher_moment(S: np.ndarray, A: np.ndarray) -> np.ndarray:
    """E[x x^T A x x^T], x = S z, z uniform on {-1, 1}^d: the average over all 2^d vectors."""
    z = np.array(list(itertools.product((-1.0, 1.0), repeat=len(S))))
    x = z @ S
    quadratic = np.einsum("ka,ab,kb->k", x, A, x)
    return np.asarray(np.einsum("k,ki,kj->ij", quadratic, x, x) / len(z))


def _isotropic_gamma(mu4_x: float, s2: float, n: int, d: int, sigma: float) -> float:
    """Section 7's scalar optimum for Sigma_x = s^2 I, Sigma_w = I (mu4_x = E x_k^4)."""
    return s2 / (mu4_x + (n + d - 2) * s2**2 + sigma**2 * s2)


def test_product_identity_matches_the_fourth_moment_tensor() -> None:
    rng = np.random.default_rng(0)
    A = rng.normal(size=(3, 3))                                # not symmetric
    S = symmetric_sqrt(SX)
    for mu4 in (1.0, 1.8, 3.0, 6.0, 9.0):
        np.testing.assert_allclose(product_fourth_moment(A, SX, mu4), _tensor_moment(S, A, mu4),
                                   rtol=1e-12, atol=1e-12)


def test_product_identity_matches_rademacher_enumeration() -> None:
    rng = np.random.default_rng(1)
    sigma_x = random_spd(rng, 5)
    A = random_spd(rng, 5)
    exact = _enumerated_rademacher_moment(symmetric_sqrt(sigma_x), A)
    np.testing.assert_allclose(product_fourth_moment(A, sigma_x, 1.0), exact, rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("spec", ["uniform", "laplace", "student-t:12"])
def test_product_identity_matches_monte_carlo_for_non_diagonal_sigma_x(spec: str) -> None:
    law = parse_law(spec)
    A = np.array([[1.0, 0.7, -0.2], [0.1, 0.5, 0.0], [0.3, -0.4, 2.0]])
    z = law.sample_standard((400_000, 3), make_generator(0, "moment"), torch.float64)
    x = z @ torch.as_tensor(symmetric_sqrt(SX))
    q = torch.einsum("ka,ab,kb->k", x, torch.as_tensor(A), x)
    samples = (q[:, None, None] * x[:, :, None] * x[:, None, :]).flatten(1)
    mean, se = samples.mean(0), samples.std(0) / math.sqrt(samples.shape[0])
    formula = torch.as_tensor(product_fourth_moment(A, SX, KURTOSIS.get(spec, 3.75)).reshape(-1))
    assert torch.all((mean - formula).abs() <= 4 * se), spec
    # two-sided: the Gaussian value (mu4 = 3) is rejected for the non-Gaussian laws
    gaussian = torch.as_tensor(product_fourth_moment(A, SX, 3.0).reshape(-1))
    assert torch.any((mean - gaussian).abs() > 8 * se)


def test_uniform_worked_example_is_20_over_33() -> None:
    task = LinearLawTask(10, 10, 0.0, np.eye(10) / 12, law=parse_law("uniform"))
    optimum = covariate_optimum(task)
    assert optimum.method == "closed-form" and optimum.isotropic
    np.testing.assert_allclose(optimum.gamma, 20 / 33 * np.eye(10), rtol=1e-12, atol=1e-14)
    # x ~ U(-1/2, 1/2): s^2 = 1/12, E x^4 = 1/80
    assert optimum.eta == pytest.approx(_isotropic_gamma(1 / 80, 1 / 12, 10, 10, 0.0), rel=1e-12)
    assert optimum.loss == pytest.approx(10 / 12 - 10 * 10 / 144 * 20 / 33, rel=1e-12)


@pytest.mark.parametrize(("spec", "d", "n", "sigma"), [
    ("rademacher", 5, 20, 0.5), ("student-t:5", 4, 10, 0.0), ("laplace", 6, 15, 0.3),
    ("uniform", 3, 7, 1.0), ("gaussian", 4, 9, 0.5),
])
def test_identity_sigma_x_matches_the_scalar_formula(spec: str, d: int, n: int,
                                                     sigma: float) -> None:
    optimum = covariate_optimum(LinearLawTask(d, n, sigma, law=parse_law(spec)))
    expected = _isotropic_gamma(KURTOSIS[spec], 1.0, n, d, sigma)
    assert optimum.method == "closed-form" and optimum.isotropic
    assert optimum.eta == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(optimum.gamma, expected * np.eye(d), rtol=1e-12, atol=1e-15)
    assert optimum.loss == pytest.approx(d + sigma**2 - n * d * expected, rel=1e-12)


def test_non_diagonal_sigma_x_matches_an_enumerated_rademacher_optimum() -> None:
    """Gamma* from the exact moments of {-1, 1}^d, minimised as a quadratic in vec(Gamma)."""
    rng = np.random.default_rng(2)
    d, n, sigma = 4, 6, 0.4
    sigma_x, sigma_w = random_spd(rng, d), random_spd(rng, d)
    optimum = covariate_optimum(LinearLawTask(d, n, sigma, sigma_x, sigma_w,
                                              law=parse_law("rademacher")))
    m4 = _enumerated_rademacher_moment(symmetric_sqrt(sigma_x), sigma_w)
    # E[v v^T] from the pairs (i, i) and (i, j != i) of the n examples
    vv = n * m4 + n * sigma**2 * sigma_x + n * (n - 1) * sigma_x @ sigma_w @ sigma_x
    # loss = const - 2 n tr(Sx G Sx Sw) + tr(Sx G vv G^T); in vec(G) row-major:
    hessian = np.kron(sigma_x, vv.T)
    linear = n * (sigma_x @ sigma_w @ sigma_x).T.reshape(-1)
    gamma = np.linalg.solve(hessian, linear).reshape(d, d)
    assert not optimum.isotropic and optimum.eta is None
    np.testing.assert_allclose(optimum.gamma, gamma, rtol=1e-9, atol=1e-12)
    # two-sided: the Gaussian optimum is clearly another matrix
    assert np.max(np.abs(gaussian_optimum(n, sigma, sigma_x, sigma_w).gamma - gamma)) > 1e-3


@given(st.integers(0, 10_000), st.integers(1, 5), st.integers(1, 40), st.floats(0.0, 2.0))
def test_gaussian_law_reproduces_the_gaussian_optimum(seed: int, d: int, n: int,
                                                      sigma: float) -> None:
    rng = np.random.default_rng(seed)
    sigma_x, sigma_w = random_spd(rng, d), random_spd(rng, d)
    ours = covariate_optimum(LinearLawTask(d, n, sigma, sigma_x, sigma_w))
    reference = gaussian_optimum(n, sigma, sigma_x, sigma_w)
    scale = float(np.max(np.abs(reference.gamma)))
    assert float(np.max(np.abs(ours.gamma - reference.gamma))) <= 1e-12 * scale
    assert ours.loss == pytest.approx(reference.loss, rel=1e-12)
    assert ours.isotropic == reference.isotropic


@pytest.mark.parametrize("spec", ["uniform", "laplace"])
def test_closed_form_matches_a_least_squares_fit_on_prompts(spec: str) -> None:
    task = LinearLawTask(3, 5, 0.5, SX, SW, law=parse_law(spec))
    optimum = covariate_optimum(task)
    fitted, se = fit_gamma(task, 150_000, seed=1)
    assert np.all(np.abs(fitted - optimum.gamma) <= 4 * se), (fitted, optimum.gamma, se)
    gaussian = gaussian_optimum(5, 0.5, SX, SW).gamma      # two-sided: the law matters
    assert np.any(np.abs(fitted - gaussian) > 4 * se)
    loss, loss_se = mc_loss(task, optimum.gamma, 150_000, seed=2)
    assert abs(loss - optimum.loss) <= 4 * loss_se


def test_span_certificate_no_nuisance_for_uniform_covariates() -> None:
    """Over the whole LSA span (nuisance features included) nothing beats x_q^T Gamma* X^T y."""
    task = LinearLawTask(2, 4, 0.5, SX[:2, :2], SW[:2, :2], law=parse_law("uniform"))
    optimum = covariate_optimum(task)
    span = span_optimum(task, fit_prompts=120_000, test_prompts=20_000, seed=3)
    assert np.all(np.abs(span.gamma - optimum.gamma) <= 4 * span.gamma_stderr)
    # the fitted nuisance shares are estimation noise (about 1e-4 here, falling as 1/prompts)
    assert span.nuisance["x_x"] < 5e-3 and span.nuisance["y_y"] < 5e-3
    # paired on fresh prompts: the span fit is not better than Gamma* (it pays its estimation
    # error, about p / fit_prompts relatively)
    p = task.sample_prompts(100_000, make_generator(4, "paired"), torch.float64)
    closed = gd_features(p) @ torch.as_tensor(optimum.gamma).reshape(-1)
    difference = (span.predict(p) - p.y_q) ** 2 - (closed - p.y_q) ** 2
    mean, se = float(difference.mean()), float(difference.std()) / math.sqrt(len(difference))
    assert -4 * se <= mean <= 4 * se + 3 * span.estimation_excess


@pytest.mark.parametrize("spec", ["uniform", "laplace", "rademacher"])
def test_monte_carlo_method_agrees_with_the_closed_form(spec: str) -> None:
    task = LinearLawTask(3, 5, 0.5, SX, SW, law=parse_law(spec))
    closed = covariate_optimum(task)
    estimate = covariate_optimum(task, monte_carlo=True, draws=100_000, seed=1)
    assert estimate.method == "monte-carlo" and estimate.stderr is not None
    assert estimate.draws == 100_000
    gamma_se = np.array(estimate.stderr["gamma"])
    assert np.all(np.abs(estimate.gamma - closed.gamma) <= 4 * gamma_se + 1e-15)
    assert abs(estimate.loss - closed.loss) <= 4 * estimate.stderr["loss"] + 1e-15


def test_monte_carlo_standard_errors_are_calibrated() -> None:
    """Across seeds the z-scores of eta and L* have standard deviation about 1."""
    task = LinearLawTask(3, 5, 0.5, np.eye(3) * 0.7, law=parse_law("laplace"))
    closed = covariate_optimum(task)
    z_eta, z_loss = [], []
    for seed in range(30):
        est = covariate_optimum(task, monte_carlo=True, draws=4000, seed=seed)
        assert est.stderr is not None and est.eta is not None and closed.eta is not None
        z_eta.append((est.eta - closed.eta) / est.stderr["eta"])
        z_loss.append((est.loss - closed.loss) / est.stderr["loss"])
    for z in (np.array(z_eta), np.array(z_loss)):
        assert 0.6 < float(np.sqrt(np.mean(z**2))) < 1.5
        assert abs(float(np.mean(z))) < 0.8


def test_fourth_moment_estimate_is_reproducible() -> None:
    law = parse_law("uniform")
    a = estimate_fourth_moment(law, SX, SW, draws=1000, seed=5)
    b = estimate_fourth_moment(law, SX, SW, draws=1000, seed=5)
    c = estimate_fourth_moment(law, SX, SW, draws=1000, seed=6)
    assert np.array_equal(a.mean, b.mean) and not np.array_equal(a.mean, c.mean)
    with pytest.raises(ConfigError):
        estimate_fourth_moment(law, SX, SW, draws=1)


def _spherical(shape: tuple[int, ...], generator: torch.Generator,
               dtype: torch.dtype) -> torch.Tensor:
    """Uniform on the sphere of radius sqrt(d): identity covariance, not a product law."""
    g = torch.randn(shape, generator=generator, dtype=dtype)
    return g / g.norm(dim=-1, keepdim=True) * math.sqrt(shape[-1])


def test_user_law_without_fourth_moment_uses_monte_carlo() -> None:
    d, n, sigma = 3, 6, 0.5
    law = UserLaw("spherical", _spherical, fourth_moment=None, product=False)
    task = LinearLawTask(d, n, sigma, law=law)
    estimate = covariate_optimum(task, draws=50_000)
    assert estimate.method == "monte-carlo" and not estimate.isotropic and estimate.eta is None
    # exactly: |x|^2 = d, so E[x x^T x x^T] = d I and Gamma* = 1 / (d + (n-1) + sigma^2) I
    expected = 1 / (d + n - 1 + sigma**2)
    se = np.array(estimate.stderr["gamma"])           # type: ignore[index]
    assert np.all(np.abs(estimate.gamma - expected * np.eye(d)) <= 4 * se + 1e-12)
    fitted, fit_se = fit_gamma(task, 150_000, seed=2)
    assert np.all(np.abs(fitted - expected * np.eye(d)) <= 4 * fit_se)
    assert estimate.to_json()["method"] == "monte-carlo" and estimate.to_json()["law"] == \
        "spherical"
