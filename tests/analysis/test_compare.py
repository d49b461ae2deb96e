import numpy as np
import pytest
import torch

from iclab.algorithms.construct import lsa_from_gamma
from iclab.algorithms.gd import OneStepGD, PreconditionedGD
from iclab.analysis.compare import (
    input_sensitivity,
    input_sensitivity_cosine,
    mean_abs_prediction_difference,
)
from tests.helpers import prompts, random_lsa


def test_lsa_sensitivity_is_M_transposed_Z_u() -> None:
    model = random_lsa(3, seed=1)
    batch = prompts(3, 6, batch=10)
    E = torch.cat([batch.X, batch.y[..., None]], -1)
    Z = E.transpose(1, 2) @ E
    with torch.no_grad():
        u, M = model.effective()
    expected = torch.einsum("ca,bcd,d->ba", M, Z, u)
    torch.testing.assert_close(input_sensitivity(model, batch), expected)


def test_a_model_against_the_algorithm_it_implements() -> None:
    gamma = 0.04 * np.eye(4)
    model = lsa_from_gamma(gamma)
    batch = prompts(4, 20, batch=500)
    assert mean_abs_prediction_difference(model, OneStepGD(0.04), batch) < 1e-14
    assert input_sensitivity_cosine(model, OneStepGD(0.04), batch) == pytest.approx(1.0, abs=1e-12)


def test_measures_separate_different_algorithms() -> None:
    batch = prompts(4, 20, batch=2000)
    gd = OneStepGD(0.04)
    other = PreconditionedGD(0.04 * np.diag([1.0, -1.0, 1.0, -1.0]))
    difference = mean_abs_prediction_difference(gd, other, batch)
    expected = float((gd(batch.X, batch.y, batch.x_q) - other(batch.X, batch.y, batch.x_q))
                     .abs().mean())
    assert difference == pytest.approx(expected)
    # Sensitivities 0.04 X^T y and 0.04 diag(1,-1,1,-1) X^T y: cosine averages near 0.
    assert abs(input_sensitivity_cosine(gd, other, batch)) < 0.05
