"""The flow's cost estimate against the steps the integrator takes, and its refusal."""

from __future__ import annotations

import numpy as np
import pytest

from iclab.studies.dynamics.cost import (
    MAX_FLOW_STEPS,
    STARTUP_STEPS,
    check_flow_cost,
    check_landings,
    estimated_steps,
)
from iclab.studies.dynamics.flow import integrate
from iclab.studies.dynamics.heads_loss import HeadsLoss
from iclab.utils.errors import ConfigError

CASES = [
    (HeadsLoss("merged", 2, 1, 10, 0.0, np.eye(3), np.eye(3)), 100.0),
    (HeadsLoss("separate", 2, 1, 4, 0.0, np.diag([1.0, 0.01]), np.eye(2)), 200.0),
    (HeadsLoss("separate", 3, 2, 5, 0.2, np.diag([2.0, 1.0, 0.3]), np.eye(3)), 100.0),
    (HeadsLoss("merged", 2, 1, 6, 0.3, np.diag([3.0, 1.0]), np.eye(2), normalise=True), 400.0),
]


@pytest.mark.parametrize(("loss", "end"), CASES)
def test_the_estimate_is_within_a_factor_10_of_the_steps_taken(loss: HeadsLoss,
                                                              end: float) -> None:
    theta0 = 1e-2 * np.random.default_rng(0).standard_normal(loss.size)
    grid = np.geomspace(end / 1e4, end, 241)       # the dense grid flow_curve lands on
    taken = integrate(lambda th: -loss.gradient(th), theta0, grid, 1e-9, 1e-13).steps
    assert 1 / 10 <= estimated_steps(loss, end) / taken <= 10


def test_the_limit_accepts_its_edge_and_refuses_past_it() -> None:
    loss = CASES[0][0]
    longest = None
    with pytest.raises(ConfigError, match=f"limit {MAX_FLOW_STEPS}") as refused:
        check_flow_cost(loss, 1e15 * 30)
    longest = float(str(refused.value).rsplit("at most ", 1)[1])
    assert check_flow_cost(loss, longest * 0.999) <= MAX_FLOW_STEPS
    with pytest.raises(ConfigError, match="integrator steps"):
        check_flow_cost(loss, longest * 1.01)


def test_landing_on_too_many_times_is_refused_before_they_are_listed() -> None:
    most = int(MAX_FLOW_STEPS - STARTUP_STEPS)
    check_landings(most)
    with pytest.raises(ConfigError, match=f"land on {most + 1} logged times"):
        check_landings(most + 1)
