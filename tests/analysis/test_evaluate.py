import numpy as np
import pytest

from iclab.algorithms.construct import lsa_from_gamma
from iclab.analysis.evaluate import evaluate, test_loss
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.gaussian import gaussian_optimum

test_loss.__test__ = False  # type: ignore[attr-defined]  # a library function, not a test


def test_optimal_lsa_scores_the_optimal_loss_within_three_standard_errors() -> None:
    sigma_x = np.diag([0.5, 1.0, 2.0])
    task = LinearGaussian(3, 10, 0.5, cov_x=sigma_x)
    optimum = gaussian_optimum(10, 0.5, sigma_x)
    model = lsa_from_gamma(optimum.gamma)
    mean, stderr = test_loss(model, task, prompts=40_000, seed=1)
    assert abs(mean - optimum.loss) < 3 * stderr
    assert stderr < 0.02 * mean


def test_evaluate_of_the_constructed_optimum() -> None:
    task = LinearGaussian(4, 12, 0.0)
    optimum = gaussian_optimum(12, 0.0, d=4)
    result = evaluate(lsa_from_gamma(optimum.gamma), task, eval_prompts=5000, seed=0)
    assert result["eta_star"] == pytest.approx(1 / (12 + 4 + 1))
    assert result["eta_rel_err"] < 1e-12 and result["gamma_rel_err"] < 1e-12
    assert result["isotropy_err"] < 1e-12 and result["gamma_star_isotropic"] is True
    assert max(result["nuisance"].values()) == 0.0
    assert result["loss_star"] == pytest.approx(optimum.loss)
    measures = result["vs_optimal_gd"]
    assert measures["mean_abs_prediction_difference"] < 1e-12
    assert measures["sensitivity_cosine"] == pytest.approx(1.0, abs=1e-12)


def test_a_detuned_model_is_measured_away_from_the_optimum() -> None:
    task = LinearGaussian(3, 10, 0.5)
    optimum = gaussian_optimum(10, 0.5, d=3)
    detuned = np.diag([1.0, 1.0, -1.0]) @ optimum.gamma  # one direction reversed
    result = evaluate(lsa_from_gamma(detuned), task, eval_prompts=5000, seed=0)
    measures = result["vs_optimal_gd"]
    assert measures["mean_abs_prediction_difference"] > 0.1
    # cos between (1, 1, -1)-weighted and plain X^T y: about 1/3 on average for d = 3
    assert 0.15 < measures["sensitivity_cosine"] < 0.5
