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
from tests.helpers import prompts, random_lsa, z_statistics_of


def test_lsa_sensitivity_is_M_transposed_Z_u() -> None:
    model = random_lsa(3, seed=1)
    batch = prompts(3, 6, batch=10)
    Z = z_statistics_of(batch).Z
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


def test_prediction_difference_against_known_differences() -> None:
    """References built to differ from one-step GD by a known amount on every prompt."""
    batch = prompts(4, 20, batch=2000)
    gd = OneStepGD(0.04)

    def shifted(X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        return gd(X, y, x_q) + 0.3                             # differs by 0.3 everywhere

    def alternating(X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        signs = torch.where(torch.arange(len(y)) % 2 == 0, 0.25, -0.25).to(y)
        return gd(X, y, x_q) + signs                          # by 0.25, up or down

    def zero(X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        return torch.zeros(len(y), dtype=y.dtype)

    assert mean_abs_prediction_difference(gd, gd, batch) == 0.0
    assert mean_abs_prediction_difference(gd, shifted, batch) == pytest.approx(0.3, rel=1e-12)
    assert mean_abs_prediction_difference(alternating, gd, batch) == pytest.approx(0.25,
                                                                                  rel=1e-12)
    # homogeneity: 3 GD against GD differs by twice GD's own size
    triple = OneStepGD(0.12)
    assert mean_abs_prediction_difference(triple, gd, batch) == pytest.approx(
        2 * mean_abs_prediction_difference(gd, zero, batch), rel=1e-12)


def test_sensitivity_cosine_separates_different_algorithms() -> None:
    batch = prompts(4, 20, batch=2000)
    gd = OneStepGD(0.04)
    other = PreconditionedGD(0.04 * np.diag([1.0, -1.0, 1.0, -1.0]))
    # Sensitivities 0.04 X^T y and 0.04 diag(1,-1,1,-1) X^T y: cosine averages near 0,
    assert abs(input_sensitivity_cosine(gd, other, batch)) < 0.05
    # and a positive multiple of the same algorithm has cosine 1, a negative one -1
    assert input_sensitivity_cosine(gd, OneStepGD(0.5), batch) == pytest.approx(1.0, abs=1e-12)
    assert input_sensitivity_cosine(gd, OneStepGD(-0.5), batch) == pytest.approx(-1.0,
                                                                                abs=1e-12)
