"""The optimal L-step GD: exact losses against whole-prompt Monte Carlo, closed forms for one
step, local optimality of the steps, the Krylov bound, the Monte Carlo paths."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclab.algorithms.base import InContextAlgorithm
from iclab.algorithms.baselines import KStepGD, PreconditionedKStepGD
from iclab.tasks.base import TaskFamily
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.tasks.nonlinear import ReluTask, anisotropic_task
from iclab.theory.depth.multistep import multistep_optimum
from iclab.theory.depth.polynomial_exact import (
    IsotropicPolynomialLoss,
    error_polynomial,
    quadrature_loss,
)
from iclab.theory.gaussian import (
    eta_star_isotropic,
    gaussian_optimum,
    gd_term_loss,
    loss_star_isotropic,
)
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from tests.helpers import random_spd


def prompt_risk(task: TaskFamily, algorithm: InContextAlgorithm, prompts: int, seed: int
                ) -> tuple[float, float]:
    """The mean squared error of ``algorithm`` on fresh whole prompts, and its stderr."""
    errors = []
    for k, start in enumerate(range(0, prompts, 25_000)):
        batch = task.sample_prompts(min(25_000, prompts - start),
                                    make_generator(seed, "test-multistep", k), torch.float64)
        errors.append((algorithm(batch.X, batch.y, batch.x_q) - batch.y_q) ** 2)
    values = torch.cat(errors)
    return float(values.mean()), float(values.std()) / prompts**0.5


@pytest.mark.parametrize(("d", "n", "sigma"), [(5, 20, 0.0), (5, 20, 0.5), (3, 10, 2.0),
                                               (6, 4, 0.3), (1, 1, 0.0)])
def test_one_step_is_theorem_1(d: int, n: int, sigma: float) -> None:
    result = multistep_optimum(LinearGaussian(d, n, sigma), 1)
    assert result.method == "exact" and result.loss_stderr == 0.0
    assert result.etas[0] == pytest.approx(1 / (n + d + 1 + sigma**2), rel=1e-15)
    assert result.etas[0] == pytest.approx(eta_star_isotropic(n, d, sigma), rel=1e-15)
    assert result.loss == pytest.approx(loss_star_isotropic(n, d, sigma), rel=1e-14)
    assert result.krylov_attained and result.krylov_loss == pytest.approx(result.loss, rel=1e-15)


def test_one_step_with_an_anisotropic_task_vector() -> None:
    """Sigma_x = I, Sigma_w = diag: still exact; the loss of eta I from section 3's closed form,
    and eta minimises it over multiples of I (the full one-layer optimum is lower)."""
    task = anisotropic_task(4, 12, 0.7)
    result = multistep_optimum(task, 1, preconditioned=False)
    eta = result.etas[0]
    assert result.method == "exact"

    def closed(e: float) -> float:
        return gd_term_loss(e * np.eye(4), 12, 0.7, task.sigma_x, task.sigma_w)

    assert result.loss == pytest.approx(closed(eta), rel=1e-13)
    assert closed(eta * 1.001) > closed(eta) and closed(eta * 0.999) > closed(eta)
    assert gaussian_optimum(12, 0.7, task.sigma_x, task.sigma_w).loss < result.loss - 1e-3


CASES = [(5, 20, 0.0, 2), (5, 20, 0.0, 3), (5, 20, 0.0, 4), (3, 10, 1.0, 2), (3, 10, 1.0, 3),
         (3, 10, 1.0, 4), (6, 4, 0.0, 3)]


@pytest.mark.parametrize(("d", "n", "sigma", "layers"), CASES)
def test_exact_loss_agrees_with_whole_prompt_monte_carlo(
    d: int, n: int, sigma: float, layers: int
) -> None:
    """Simulate whole prompts, run KStepGD with the returned steps: within 4 stderr."""
    task = LinearGaussian(d, n, sigma)
    result = multistep_optimum(task, layers)
    assert result.method == "exact" and len(result.etas) == layers
    assert list(result.etas) == sorted(result.etas)
    mean, se = prompt_risk(task, KStepGD(list(result.etas)), 100_000, seed=layers)
    assert abs(mean - result.loss) < 4 * se, (mean, se, result.loss)
    assert se < 0.02 * result.loss                          # the check has teeth


@pytest.mark.parametrize(("d", "n", "sigma", "layers"), CASES)
def test_steps_are_a_local_optimum(d: int, n: int, sigma: float, layers: int) -> None:
    """Moving any one step by 0.1 % either way raises the exact (rational) loss."""
    task = LinearGaussian(d, n, sigma)
    exact = IsotropicPolynomialLoss.from_task(task)
    assert exact is not None
    etas = list(multistep_optimum(task, layers).etas)

    def loss(steps: list[float]) -> Fraction:
        return exact.loss_of_error_polynomial(error_polynomial(steps))

    best = loss(etas)
    for k in range(layers):
        for factor in (0.999, 1.001):
            moved = etas.copy()
            moved[k] *= factor
            assert loss(moved) > best


def test_krylov_bound_attained_and_not() -> None:
    """Noise-free: the best polynomial has L positive roots, the steps are their reciprocals
    and GD attains the bound. Noisy enough: complex roots, GD strictly above the bound."""
    clean = multistep_optimum(LinearGaussian(5, 20, 0.0), 4)
    assert clean.krylov_attained and clean.loss == pytest.approx(clean.krylov_loss, rel=1e-12)
    noisy = multistep_optimum(LinearGaussian(3, 10, 1.0), 4)
    assert not noisy.krylov_attained
    assert noisy.krylov_loss < noisy.loss - 1e-4
    # the best of three and of four steps: more steps never hurt
    assert noisy.loss < multistep_optimum(LinearGaussian(3, 10, 1.0), 3).loss


@pytest.mark.parametrize(("sigma", "layers"), [(0.0, 2), (0.7, 3)])
def test_krylov_bound_against_a_least_squares_fit(sigma: float, layers: int) -> None:
    """The best q of degree L-1 fitted by numpy least squares on whole prompts (features
    x_q^T S^j X^T y) has, on fresh prompts, the Krylov loss within 4 stderr."""
    d, n = 3, 8
    task = LinearGaussian(d, n, sigma)
    result = multistep_optimum(task, layers)

    def features(seed: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        p = task.sample_prompts(count, make_generator(seed, "test-krylov"), torch.float64)
        S = p.X.transpose(1, 2) @ p.X
        v = torch.einsum("bnd,bn->bd", p.X, p.y)
        columns, power = [], v
        for _ in range(layers):
            columns.append((p.x_q * power).sum(-1))
            power = torch.einsum("bij,bj->bi", S, power)
        return torch.stack(columns, 1).numpy(), p.y_q.numpy()

    F, target = features(0, 200_000)
    scale = np.abs(F).max(0)
    coefficients = np.linalg.lstsq(F / scale, target, rcond=None)[0] / scale
    F, target = features(1, 200_000)
    errors = (F @ coefficients - target) ** 2
    mean, se = errors.mean(), errors.std() / len(errors) ** 0.5
    assert abs(mean - result.krylov_loss) < 4 * se + 2e-3 * result.krylov_loss, (mean, se)


def test_quadrature_and_rational_losses_agree() -> None:
    """The Gauss rule (float) and the Hankel sums (rational) give the same loss at any steps."""
    exact = IsotropicPolynomialLoss.from_task(LinearGaussian(4, 9, 0.8))
    assert exact is not None
    generator = torch.Generator().manual_seed(3)
    for layers in (1, 3, 6):
        nodes, weights, signal, noise, sigma2 = exact.step_objective(layers)
        for _ in range(5):
            etas = 0.02 + 0.2 * torch.rand(layers, generator=generator, dtype=torch.float64)
            quadrature = float(quadrature_loss(etas, nodes, weights, signal, noise, sigma2))
            assert quadrature == pytest.approx(exact.loss_of_steps(etas.tolist()), rel=1e-11)


def test_anisotropic_task_vector_is_exact_for_several_steps() -> None:
    task = anisotropic_task(4, 12, 0.5)
    result = multistep_optimum(task, 3, preconditioned=False)
    assert result.method == "exact"
    mean, se = prompt_risk(task, KStepGD(list(result.etas)), 100_000, seed=5)
    assert abs(mean - result.loss) < 4 * se


def test_scaled_covariates_are_exact() -> None:
    """Sigma_x = 2 I with a non-scalar Sigma_w: exact, checked on whole prompts."""
    task = LinearGaussian(3, 7, 0.4, cov_x=2 * np.eye(3), cov_w=np.diag([0.5, 1.0, 2.0]))
    result = multistep_optimum(task, 3, preconditioned=False)
    assert result.method == "exact" and result.whitened_etas is None
    mean, se = prompt_risk(task, KStepGD(list(result.etas)), 100_000, seed=6)
    assert abs(mean - result.loss) < 4 * se
    assert se < 0.03 * result.loss


def test_forced_monte_carlo_agrees_with_the_exact_loss() -> None:
    task = LinearGaussian(4, 10, 0.5)
    exact = multistep_optimum(task, 3)
    mc = multistep_optimum(task, 3, monte_carlo=True, fit_prompts=20_000, eval_prompts=50_000)
    assert mc.method == "monte-carlo" and mc.loss_stderr > 0
    assert abs(mc.loss - exact.loss) < 4 * mc.loss_stderr + 2e-3 * exact.loss
    assert abs(mc.krylov_loss - exact.krylov_loss) < 4 * mc.krylov_loss_stderr \
        + 2e-3 * exact.loss
    assert np.allclose(mc.etas, exact.etas, rtol=0.05)
    again = multistep_optimum(task, 3, monte_carlo=True, fit_prompts=20_000, eval_prompts=50_000)
    assert again == mc                                   # reproducible from the seed


def test_non_isotropic_covariates() -> None:
    """Sigma_x not a multiple of I: plain GD by Monte Carlo, checked on whole prompts;
    GD preconditioned by Sigma_x^-1 exact, checked on whole prompts; it beats plain GD."""
    sigma_x = random_spd(np.random.default_rng(4), 3)
    task = LinearGaussian(3, 10, 0.5, cov_x=sigma_x)
    result = multistep_optimum(task, 2, fit_prompts=20_000, eval_prompts=50_000,
                               preconditioned=False)
    assert result.method == "monte-carlo" and result.preconditioners is None
    mean, se = prompt_risk(task, KStepGD(list(result.etas)), 100_000, seed=7)
    assert abs(mean - result.loss) < 4 * (se**2 + result.loss_stderr**2) ** 0.5
    assert result.whitened_etas is not None and result.whitened_loss is not None
    inverse = np.linalg.inv(sigma_x)
    whitened = PreconditionedKStepGD([eta * inverse for eta in result.whitened_etas])
    mean, se = prompt_risk(task, whitened, 100_000, seed=8)
    assert abs(mean - result.whitened_loss) < 4 * se
    assert result.whitened_loss < result.loss


def test_best_one_step_preconditioner_is_gamma_star() -> None:
    """L = 1: the fitted preconditioner is section 3's Gamma* and its loss L*."""
    sigma_x = random_spd(np.random.default_rng(5), 3)
    task = LinearGaussian(3, 10, 0.5, cov_x=sigma_x)
    result = multistep_optimum(task, 1, fit_prompts=10_000, eval_prompts=50_000)
    optimum = gaussian_optimum(10, 0.5, sigma_x, None)
    assert result.preconditioners is not None and result.preconditioned_loss is not None
    assert result.preconditioned_loss_stderr is not None
    assert abs(result.preconditioned_loss - optimum.loss) < 4 * result.preconditioned_loss_stderr
    gap = np.linalg.norm(result.preconditioners[0] - optimum.gamma) / np.linalg.norm(optimum.gamma)
    assert gap < 0.05
    assert result.preconditioned_loss < result.loss


@pytest.mark.slow
def test_theorem_2_setting_preconditioned_steps_reach_the_whitened_optimum() -> None:
    """Sigma_w = Sigma_x^-1: A_l = eta_l Sigma_x^-1 with the isotropic steps is a stationary
    point (Ahn et al.); the fitted preconditioners reach its exact loss, not below."""
    sigma_x = random_spd(np.random.default_rng(6), 3)
    task = LinearGaussian(3, 10, 0.5, cov_x=sigma_x, cov_w=np.linalg.inv(sigma_x))
    result = multistep_optimum(task, 2)
    isotropic = multistep_optimum(LinearGaussian(3, 10, 0.5), 2)
    assert result.whitened_loss == pytest.approx(isotropic.loss, rel=1e-12)
    assert result.preconditioned_loss is not None and result.preconditioned_loss_stderr is not None
    assert abs(result.preconditioned_loss - isotropic.loss) \
        < 4 * result.preconditioned_loss_stderr + 3e-3 * isotropic.loss


def test_relu_family_by_monte_carlo() -> None:
    """A family known only through sample_prompts: one step near 1/(n + 2d + 3 + 4 sigma^2 d),
    two steps checked on independent whole prompts."""
    task = ReluTask(3, 10, 0.5)
    one = multistep_optimum(task, 1, fit_prompts=20_000, eval_prompts=50_000)
    assert one.method == "monte-carlo"
    assert one.etas[0] == pytest.approx(1 / (10 + 6 + 3 + 4 * 0.25 * 3), rel=0.05)
    two = multistep_optimum(task, 2, fit_prompts=20_000, eval_prompts=50_000)
    mean, se = prompt_risk(task, KStepGD(list(two.etas)), 50_000, seed=9)
    assert abs(mean - two.loss) < 4 * (se**2 + two.loss_stderr**2) ** 0.5
    assert two.loss < one.loss


def test_json_output() -> None:
    result = multistep_optimum(LinearGaussian(5, 20, 0.0), 3)
    data = json.loads(json.dumps(result.to_json()))
    assert data["gd_steps_etas"] == list(result.etas) and len(data["gd_steps_etas"]) == 3
    assert data["gd_steps_loss"] == result.loss
    assert data["gd_steps_loss_stderr"] == 0.0
    assert data["gd_steps_method"] == "exact"
    assert data["krylov_loss"] == result.krylov_loss
    assert data["preconditioned_gd_matrices"] is None


@given(st.one_of(st.integers(-3, 0), st.integers(9, 20), st.booleans(), st.floats(1, 3)))
def test_refuses_bad_layers(layers: object) -> None:
    with pytest.raises(ConfigError, match=r"layers must be an integer in 1\.\.8"):
        multistep_optimum(LinearGaussian(2, 4, 0.1), layers)  # type: ignore[arg-type]


def test_refuses_tiny_samples() -> None:
    with pytest.raises(ConfigError, match="fit_prompts must be an integer >= 1000"):
        multistep_optimum(LinearGaussian(2, 4, 0.1), 2, fit_prompts=10)
    with pytest.raises(ConfigError, match="eval_prompts must be an integer >= 1000"):
        multistep_optimum(LinearGaussian(2, 4, 0.1), 2, eval_prompts=999)
