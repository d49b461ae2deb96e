"""The exact gradient-flow curve of a run (docs/theory.md section 18): the loss at the run's
logged times, on a dense log grid for the plateaus, integrated past them until it has
converged, with the integration error estimated by a second pass at half the tolerances."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from iclab.studies.dynamics.flow import integrate
from iclab.studies.dynamics.heads_loss import HeadsLoss

POINTS_PER_DECADE = 60
CONVERGED = 1e-12
"""The flow has converged when the loss changes by less than this (relative) over [T, 2T]."""
LONGEST = 1e8
RTOL, ATOL = 1e-9, 1e-13


@dataclass(frozen=True)
class FlowCurve:
    """The flow's loss at the logged ``times`` (``losses``), on the dense grid (``grid``,
    ``grid_losses``, through convergence), the final time and loss, whether it converged by
    ``LONGEST``, the largest relative loss difference of the half-tolerance pass (``error``)
    and the integrator's steps."""

    times: np.ndarray
    losses: np.ndarray
    grid: np.ndarray
    grid_losses: np.ndarray
    final_time: float
    final_loss: float
    converged: bool
    error: float
    steps: int


def _run(loss: HeadsLoss, theta0: np.ndarray, grid: np.ndarray, rtol: float, atol: float,
         progress: Callable[[float], None] | None) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """(grid, losses, steps, converged): the flow on ``grid`` and then on doubling chunks of
    POINTS_PER_DECADE / 3 points each until it converges."""

    def field(theta: np.ndarray) -> np.ndarray:
        return -loss.gradient(theta)

    result = integrate(field, theta0, grid, rtol, atol, progress)
    times, thetas, steps = [result.times], [result.theta], result.steps
    converged = False
    while times[-1][-1] < LONGEST:
        end = times[-1][-1]
        chunk = np.geomspace(end, 2 * end, POINTS_PER_DECADE // 3 + 1)[1:]
        more = integrate(field, thetas[-1][-1], chunk, rtol, atol, progress, t0=end)
        steps += more.steps
        times.append(more.times)
        thetas.append(more.theta)
        before, after = loss.loss(thetas[-2][-1]), loss.loss(more.theta[-1])
        if abs(before - after) <= CONVERGED * max(abs(after), 1e-300):
            converged = True
            break
    t = np.concatenate(times)
    theta = np.concatenate(thetas)
    return t, np.array([loss.loss(row) for row in theta]), steps, converged


def _apart(dense: np.ndarray, times: np.ndarray) -> np.ndarray:
    """The points of ``dense`` not within 1e-9 (relative) of any of ``times`` (sorted), so
    that the grid has no two points that ln t cannot tell apart."""
    right = np.clip(np.searchsorted(times, dense), 0, times.size - 1)
    left = np.clip(right - 1, 0, times.size - 1)
    near = np.minimum(np.abs(times[right] / dense - 1), np.abs(times[left] / dense - 1))
    kept: np.ndarray = dense[near > 1e-9]
    return kept


def flow_curve(loss: HeadsLoss, theta0: np.ndarray, times: np.ndarray,
               rtol: float = RTOL, atol: float = ATOL,
               progress: Callable[[float], None] | None = None) -> FlowCurve:
    """The exact flow from theta0 (float64, ``loss``'s layout) at ``times`` (> 0, increasing)
    and through convergence; its error estimated by a second pass at rtol/2, atol/2."""
    times = np.asarray(times, dtype=np.float64)
    start, stop = times[0] / 100, times[-1]
    decades = max(np.log10(stop / start), 1.0)
    dense = np.geomspace(start, stop, int(decades * POINTS_PER_DECADE) + 1)
    grid = np.union1d(_apart(dense, times), times)
    t, losses, steps, converged = _run(loss, theta0, grid, rtol, atol, progress)
    t_half, losses_half, _, _ = _run(loss, theta0, t[t <= stop], rtol / 2, atol / 2, None)
    common = min(t.size, t_half.size)
    error = float(np.max(np.abs(losses[:common] - losses_half[:common])
                         / np.abs(losses_half[:common])))
    logged = np.searchsorted(t, times)
    return FlowCurve(times, losses[logged], t, losses, float(t[-1]), float(losses[-1]),
                     converged, error, steps)
