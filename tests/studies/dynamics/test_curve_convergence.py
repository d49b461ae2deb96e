"""The flow's convergence cannot be fooled by a plateau: converged only within CONVERGED_GAP
of the best loss the heads can reach, L* from the Gaussian theory's optimum."""

from __future__ import annotations

import numpy as np
import pytest

from iclab.studies.dynamics import flow_curve as curve_module
from iclab.studies.dynamics.flow_curve import CONVERGED_GAP, flow_curve
from iclab.studies.dynamics.heads_loss import HeadsLoss
from iclab.theory.gaussian import gaussian_optimum


def _start(loss: HeadsLoss, scale: float) -> np.ndarray:
    return scale * np.random.default_rng(0).standard_normal(loss.size)


def test_a_saddle_plateau_is_not_converged() -> None:
    """Sigma_x = diag(1, 0.01): the flow stalls on the rank-1 plateau, 1.1e-3 above L*, for
    longer than any doubling stretch tells apart (it leaves near t = 1e6)."""
    sigma_x = np.diag([1.0, 0.01])
    loss = HeadsLoss("separate", 2, 1, 4, 0.0, sigma_x, np.eye(2))
    curve = flow_curve(loss, _start(loss, 1e-3), np.geomspace(1e-3, 0.03, 10))
    star = gaussian_optimum(4, 0.0, sigma_x).loss
    assert curve.final_loss / star - 1 > 1e-4       # on the plateau, far above L*
    assert not curve.converged and curve.stop == "stalled"
    assert curve.gap == pytest.approx(curve.final_loss / star - 1, rel=1e-9)


def test_a_converged_flow_is_within_the_gap_of_the_optimum() -> None:
    loss = HeadsLoss("merged", 2, 1, 5, 0.2, np.eye(2), np.eye(2))
    curve = flow_curve(loss, _start(loss, 1e-2), np.geomspace(0.01, 1.0, 10))
    star = gaussian_optimum(5, 0.2, d=2).loss
    assert curve.converged
    assert abs(curve.final_loss / star - 1) <= CONVERGED_GAP   # below it by rounding only


def test_heads_of_too_low_a_rank_converge_to_their_own_best_loss() -> None:
    """One rank-1 head in d = 3 makes Gamma of rank 1: its best loss is the top principal
    direction's, above L*, and the flow reaches it."""
    sigma_x = np.diag([2.0, 1.0, 0.5])
    loss = HeadsLoss("separate", 1, 1, 6, 0.1, sigma_x, np.eye(3))
    curve = flow_curve(loss, _start(loss, 1e-2), np.geomspace(0.01, 1.0, 10))
    # Gamma = g e1 e1^T: L(g) = c0 - 2 n g lambda_1^2 + n g^2 lambda_1 K_11, K_11 =
    # E[(X^T y)_1^2] / n = (n+1) lambda_1^2 + lambda_1 (tr Sigma_x + sigma^2) on white tasks
    n, lam, c0 = 6, 2.0, 3.5 + 0.01
    k11 = (n + 1) * lam**2 + lam * (3.5 + 0.01)
    best_rank_one = c0 - n * lam**4 / (lam * k11)
    assert curve.converged
    assert curve.target == pytest.approx(best_rank_one, rel=1e-12)
    assert curve.final_loss > gaussian_optimum(6, 0.1, sigma_x).loss * (1 + 1e-3)


def test_the_extension_stops_on_its_step_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(curve_module, "EXTENSION_STEPS", 10)
    loss = HeadsLoss("merged", 2, 1, 5, 0.2, np.eye(2), np.eye(2))
    curve = flow_curve(loss, _start(loss, 1e-2), np.geomspace(0.01, 0.1, 5))
    assert curve.stop == "budget" and not curve.converged
    assert curve.final_time == pytest.approx(0.1)
