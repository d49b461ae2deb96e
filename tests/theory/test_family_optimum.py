"""The optimum of every family: closed forms against Monte Carlo, and the dispatch."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace

import numpy as np
import pytest
import torch

from iclab.algorithms.gd import OneStepGD
from iclab.studies.covariates.laws import CovariateLaw, parse_law
from iclab.studies.covariates.linear_law import LinearLawTask
from iclab.studies.covariates.optimum import covariate_optimum
from iclab.tasks.base import TaskFamily
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.tasks.nonlinear import FunctionTask, ReluTask, TwoLayerReluTask, anisotropic_task
from iclab.theory.family_optimum import CLOSED_FORM, MONTE_CARLO, family_optimum
from iclab.theory.gaussian import eta_star_isotropic, gaussian_optimum, loss_star_isotropic
from iclab.theory.optimum import FamilyOptimum
from iclab.theory.rotation_invariant import (
    arccos_kernel,
    estimate_gd_optimum,
    generic_moment_draws,
    relu_optimum,
    two_layer_moment_draws,
)
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator


def linear_draw(inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    w = torch.randn(inputs.shape[0], inputs.shape[2], generator=generator, dtype=inputs.dtype)
    return torch.einsum("bkd,bd->bk", inputs, w)


def test_relu_closed_form() -> None:
    for n, d, sigma in ((8, 4, 0.5), (20, 5, 0.5), (3, 1, 0.0)):
        optimum = relu_optimum(n, d, sigma)
        assert optimum.eta == pytest.approx(1 / (n + 2 * d + 3 + 4 * sigma**2 * d), rel=1e-14)
        assert optimum.loss == pytest.approx(0.5 + sigma**2 - n * optimum.eta / 4, rel=1e-14)


def test_relu_loss_formula_against_simulated_gd() -> None:
    # The loss of one-step GD with step eta on relu prompts, by direct simulation, is L* at
    # eta*, and larger 20% away from it: by L(eta) - L* = (eta - eta*)^2 (n/4) / eta*, a
    # quadratic with its minimum L* at eta*, compared on the same prompts (paired).
    n, d, sigma = 6, 3, 0.5
    optimum = relu_optimum(n, d, sigma)
    prompts = ReluTask(d, n, sigma).sample_prompts(400_000, make_generator(0, "sim"),
                                                   torch.float64)

    def errors(factor: float) -> torch.Tensor:
        predictions = OneStepGD(factor * optimum.eta)(prompts.X, prompts.y, prompts.x_q)
        return (predictions - prompts.y_q) ** 2

    at_optimum = errors(1.0)
    stderr = float(at_optimum.std() / math.sqrt(at_optimum.numel()))
    assert abs(float(at_optimum.mean()) - optimum.loss) <= 3 * stderr
    for factor in (0.8, 1.2):
        excess = errors(factor) - at_optimum
        mean, stderr = float(excess.mean()), float(excess.std() / math.sqrt(excess.numel()))
        expected = (factor - 1.0) ** 2 * optimum.eta * n / 4
        assert mean > 3 * stderr and abs(mean - expected) <= 4 * stderr


def test_relu_monte_carlo_meets_the_closed_form_and_the_precision() -> None:
    n, d, sigma = 8, 4, 0.5
    task = ReluTask(d, n, sigma)
    estimate = family_optimum(task, monte_carlo=True, seed=1)
    closed = relu_optimum(n, d, sigma)
    assert estimate.method == MONTE_CARLO and estimate.stderr is not None
    assert estimate.eta is not None
    assert estimate.stderr["eta"] <= 0.002 * estimate.eta
    assert abs(estimate.eta - closed.eta) <= 3 * estimate.stderr["eta"]
    assert abs(estimate.loss - closed.loss) <= 3 * estimate.stderr["loss"]
    np.testing.assert_allclose(estimate.gamma, estimate.eta * np.eye(d))


def test_arccos_kernel_against_monte_carlo() -> None:
    generator = make_generator(2, "k")
    W = torch.randn(1, 3, 4, generator=generator, dtype=torch.float64)
    W[0, 2] = -0.7 * W[0, 0]                          # an angle of pi
    x = torch.randn(400_000, 4, generator=generator, dtype=torch.float64)
    hidden = torch.relu(x @ W[0].T)                   # (N, 3)
    empirical = hidden.T @ hidden / x.shape[0]
    torch.testing.assert_close(arccos_kernel(W)[0], empirical, rtol=0.02, atol=0.01)
    assert float(arccos_kernel(W)[0, 0, 2]) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("width", [1, 8])
def test_two_layer_equals_relu_and_both_monte_carlos_agree(width: int) -> None:
    n, d, sigma = 10, 3, 0.3
    task = TwoLayerReluTask(d, n, sigma, width)
    closed = family_optimum(task)
    assert closed.method == CLOSED_FORM and closed.eta == relu_optimum(n, d, sigma).eta
    exact_per_network = estimate_gd_optimum(two_layer_moment_draws(task), n, d, sigma, seed=3)
    assert abs(exact_per_network.eta - closed.eta) <= 3 * exact_per_network.eta_stderr
    assert abs(exact_per_network.loss - closed.loss) <= 3 * exact_per_network.loss_stderr
    sampled = estimate_gd_optimum(generic_moment_draws(task.draw_values, d), n, d, sigma,
                                  precision=0.004, seed=4)
    assert abs(sampled.eta - closed.eta) <= 3 * sampled.eta_stderr


def test_gaussian_families_are_closed_form_with_bayes() -> None:
    task = LinearGaussian(4, 10, 0.5)
    optimum = family_optimum(task, bayes=True, bayes_prompts=4000)
    assert optimum.method == CLOSED_FORM and optimum.stderr is None
    assert optimum.eta == pytest.approx(eta_star_isotropic(10, 4, 0.5), rel=1e-14)
    assert optimum.loss == pytest.approx(loss_star_isotropic(10, 4, 0.5), rel=1e-14)
    assert optimum.bayes_loss is not None and optimum.bayes_loss_stderr is not None
    assert 0.25 < optimum.bayes_loss < optimum.loss        # ridge beats one step of GD
    aniso = family_optimum(anisotropic_task(3, 10, 0.5))
    closed = gaussian_optimum(10, 0.5, np.eye(3), np.diag([0.25, 2.125, 4.0]))
    assert aniso.eta is None and not aniso.isotropic
    np.testing.assert_allclose(aniso.gamma, closed.gamma, rtol=1e-14)
    assert family_optimum(ReluTask(3, 10, 0.5), bayes=True).bayes_loss is None


def test_gaussian_monte_carlo_is_the_span_optimum() -> None:
    task = LinearGaussian(2, 5, 0.5)
    optimum = family_optimum(task, monte_carlo=True, seed=5)
    closed = gaussian_optimum(5, 0.5, d=2)
    assert optimum.method == MONTE_CARLO and optimum.stderr is not None
    assert optimum.eta is not None
    assert abs(optimum.eta - closed.eta) <= 3 * optimum.stderr["eta"]
    assert abs(optimum.loss - closed.loss) <= 3 * optimum.stderr["loss"]


def test_user_families() -> None:
    # A linear family declared rotation-invariant: the ratio estimate finds Theorem 1's eta*.
    n, d, sigma = 6, 2, 0.5
    invariant = FunctionTask(d, n, sigma, linear_draw, "lin", rotation_invariant=True)
    estimate = family_optimum(invariant, seed=6)
    assert estimate.method == MONTE_CARLO and estimate.stderr is not None
    assert estimate.eta is not None
    assert abs(estimate.eta - eta_star_isotropic(n, d, sigma)) <= 3 * estimate.stderr["eta"]
    assert abs(estimate.loss - loss_star_isotropic(n, d, sigma)) <= 3 * estimate.stderr["loss"]
    # Undeclared, the same family goes through the span: no eta, Gamma close to eta* I.
    general = FunctionTask(d, n, sigma, linear_draw, "lin")
    span = family_optimum(general, seed=7)
    assert span.eta is None and not span.isotropic and span.stderr is not None
    gamma_se = np.array(span.stderr["gamma"])
    z = np.abs(span.gamma - eta_star_isotropic(n, d, sigma) * np.eye(d)) / gamma_se
    assert z.max() < 4.5


def test_precision_is_checked() -> None:
    with pytest.raises(ConfigError, match="precision"):
        estimate_gd_optimum(generic_moment_draws(linear_draw, 2), 3, 2, 0.1, precision=0.0)


def test_generic_monte_carlo_on_a_heavy_tailed_family() -> None:
    # f = (u.x)^3, u uniform on the sphere: g_f = 3u, so G = 9, A = E z^6 = 15 and
    # B = E[z^6 (z^2 + chi2_{d-1})] = 105 + 15 (d-1); the ratio then gives eta and L* exactly.
    def cubic(inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        u = torch.randn(inputs.shape[0], inputs.shape[2], generator=generator,
                        dtype=inputs.dtype)
        return torch.einsum("bkd,bd->bk", inputs, u / u.norm(dim=-1, keepdim=True)) ** 3

    n, d, sigma = 10, 4, 0.5
    G, A, B = 9.0, 15.0, 105.0 + 15.0 * (d - 1)
    eta = G / (B + sigma**2 * d + (n - 1) * G)
    estimate = estimate_gd_optimum(generic_moment_draws(cubic, d), n, d, sigma,
                                   precision=0.005, seed=8)
    assert estimate.eta_stderr <= 0.005 * estimate.eta
    assert abs(estimate.eta - eta) <= 3 * estimate.eta_stderr
    assert abs(estimate.loss - (A + sigma**2 - n * eta * G)) <= 3 * estimate.loss_stderr


@dataclass(frozen=True)
class DeclaredLawTask(TaskFamily):
    """Not a LinearLawTask: only the attributes a family with a covariate law declares."""

    d: int = 3
    n: int = 7
    sigma: float = 0.4
    name: str = "mine"
    statistics: bool = False
    gaussian: bool = False
    rotation_invariant: bool = False
    sign_symmetric: bool = True
    covariate_law: CovariateLaw = field(default_factory=lambda: parse_law("uniform"))
    correlated: bool = False

    def own_optimum(self, monte_carlo: bool = False, seed: int = 0) -> FamilyOptimum:
        """The covariates study's optimum of a declared law (not of LinearLawTask's class)."""
        return covariate_optimum(self, monte_carlo=monte_carlo,  # type: ignore[arg-type]
                                 seed=seed).as_family_optimum()

    @property
    def sigma_x(self) -> np.ndarray:
        return np.eye(self.d)

    @property
    def sigma_w(self) -> np.ndarray:
        return np.eye(self.d)

    @property
    def position_covariance(self) -> np.ndarray:
        return np.eye(self.n + 1)


def test_a_declared_covariate_law_is_asked_for_not_a_class() -> None:
    # Uniform coordinates, identity covariances: Gamma* = I / (mu4 + n + d - 2 + sigma^2).
    task = DeclaredLawTask()
    optimum = family_optimum(task)
    expected = 1 / (9 / 5 + task.n + task.d - 2 + task.sigma**2)
    assert optimum.method == CLOSED_FORM and optimum.isotropic
    assert optimum.eta == pytest.approx(expected, rel=1e-13)
    assert np.allclose(optimum.gamma, expected * np.eye(3), rtol=0, atol=1e-15)
    assert optimum.n_eff is None and optimum.to_json()["n_eff"] is None
    estimate = family_optimum(task, monte_carlo=True, seed=3)
    assert estimate.method == MONTE_CARLO and estimate.stderr is not None
    assert abs(estimate.loss - optimum.loss) <= 4 * estimate.stderr["loss"]


def test_correlated_contexts_report_n_eff_and_json_has_no_infinity() -> None:
    optimum = family_optimum(LinearLawTask(5, 20, 0.5, rho=0.5))
    assert optimum.n_eff is not None and 13 < optimum.n_eff < 14
    assert optimum.to_json()["n_eff"] == optimum.n_eff
    unbounded = replace(optimum, n_eff=math.inf)
    assert json.loads(json.dumps(unbounded.to_json(), allow_nan=False))["n_eff"] is None
