"""Measures of a model without a linear read-out against one-step GD, ridge and OLS."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from iclab.algorithms import lsa_from_gamma
from iclab.algorithms.baselines import BayesPosteriorMean, LeastSquares
from iclab.analysis.reference_measures import reference_measures
from iclab.studies.softmax.model import SoftmaxAttention, SoftmaxModelOptions
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.gaussian import gaussian_optimum
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

TASK = LinearGaussian(4, 12, 0.5)
GAMMA = gaussian_optimum(12, 0.5, d=4).gamma
KEYS = {"mean_abs_prediction_difference", "sensitivity_cosine", "reference_loss"}


def test_a_model_that_is_each_reference() -> None:
    """Measured against itself a reference gives difference 0 and cosine 1; against the others
    a clearly positive difference and a cosine below 1 (ridge and OLS are close at n = 3d)."""
    for key, model in [("vs_optimal_gd", lsa_from_gamma(GAMMA)),
                       ("vs_ridge", BayesPosteriorMean(0.5, np.eye(4))),
                       ("vs_ols", LeastSquares())]:
        result = reference_measures(model, TASK, GAMMA, prompts=2000, seed=0)
        assert set(result) == {"vs_optimal_gd", "vs_ridge", "vs_ols"}
        for other, measures in result.items():
            assert set(measures) == KEYS
            if other == key:
                assert measures["mean_abs_prediction_difference"] < 1e-10
                assert measures["sensitivity_cosine"] == pytest.approx(1.0, abs=1e-10)
            else:
                assert measures["mean_abs_prediction_difference"] > 0.03
                assert measures["sensitivity_cosine"] < 0.9999  # ridge, OLS: 0.9997 here
        json.dumps(result)


def test_reference_losses_are_the_references_losses() -> None:
    """Ridge (the training posterior mean) beats OLS and one-step GD on the same prompts; GD's
    loss sits near its closed form L* (within a loose Monte Carlo margin)."""
    result = reference_measures(LeastSquares(), TASK, GAMMA, prompts=4000, seed=1)
    ridge, ols, gd = (result[k]["reference_loss"] for k in ("vs_ridge", "vs_ols", "vs_optimal_gd"))
    assert ridge < ols < gd
    assert gd == pytest.approx(gaussian_optimum(12, 0.5, d=4).loss, rel=0.08)


def test_softmax_model_is_measured() -> None:
    net = SoftmaxAttention(4, SoftmaxModelOptions(heads=2, init_scale=0.5),
                           make_generator(0, "init"), torch.float64)
    result = reference_measures(net, TASK, GAMMA, prompts=500, seed=0)
    for measures in result.values():
        assert -1.0 <= measures["sensitivity_cosine"] <= 1.0
        assert measures["mean_abs_prediction_difference"] > 0


def test_bad_inputs() -> None:
    with pytest.raises(ConfigError, match="gamma_star"):
        reference_measures(LeastSquares(), TASK, np.eye(3), prompts=10)
    with pytest.raises(ConfigError, match="prompts"):
        reference_measures(LeastSquares(), TASK, GAMMA, prompts=0)
