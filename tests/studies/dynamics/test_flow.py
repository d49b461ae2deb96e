"""The adaptive Dormand-Prince integrator against closed-form solutions."""

from __future__ import annotations

import numpy as np
import pytest

from iclab.studies.dynamics.flow import integrate
from iclab.utils.errors import ConfigError


def test_linear_decay_and_rotation_match_their_closed_forms() -> None:
    rates = np.array([0.5, 3.0, 40.0])
    result = integrate(lambda y: -rates * y, np.ones(3), [0.1, 1.0, 2.0], rtol=1e-10,
                       atol=1e-14)
    expected = np.exp(-np.outer(result.times, rates))
    np.testing.assert_allclose(result.theta, expected, rtol=1e-7, atol=1e-12)
    spin = integrate(lambda y: np.array([y[1], -y[0]]), np.array([1.0, 0.0]), [20.0],
                     rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(spin.theta[0], [np.cos(20.0), -np.sin(20.0)], atol=1e-7)


def test_halving_the_tolerance_shrinks_the_error() -> None:
    """A logistic y' = y (1 - y): y(t) = 1 / (1 + 99 e^{-t}) from y(0) = 0.01."""
    def field(y: np.ndarray) -> np.ndarray:
        return y * (1 - y)

    exact = 1 / (1 + 99 * np.exp(-10.0))
    errors = [abs(float(integrate(field, np.array([0.01]), [10.0], rtol=tol,
                                  atol=1e-16).theta[0, 0]) - exact) for tol in (1e-5, 1e-8)]
    assert errors[1] < errors[0]
    assert errors[1] < 1e-7


def test_times_must_increase() -> None:
    with pytest.raises(ConfigError, match="strictly"):
        integrate(lambda y: y, np.ones(1), [1.0, 0.5])
