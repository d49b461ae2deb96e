"""The exact gradient-flow curve of a run (docs/theory.md section 18): the loss at the run's
logged times, on a dense log grid for the plateaus, integrated past them until it has
converged, with the integration error estimated by a second pass at half the tolerances.

Converged means one thing: the loss is within ``CONVERGED_GAP`` (relative) of the best loss
the model can reach (``target``: L_k of the plateau theory, k = the largest rank of Gamma the
heads can make). A flat stretch is not enough, since the plateaus the flow is about are flat:
a flow that stalls above the target, runs out of time or out of its step budget is reported
as not converged, with the reason (``stop``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from iclab.studies.dynamics.flow import integrate
from iclab.studies.dynamics.heads_loss import HeadsLoss
from iclab.studies.dynamics.plateaus import rank_k_losses

POINTS_PER_DECADE = 60
CONVERGED_GAP = 1e-9
"""Converged: loss - target <= CONVERGED_GAP x target."""
STALLED = 1e-12
"""The extension stops (not converged) when the loss changes by less than this (relative)
over [T, 2T] while still above the target: a plateau the flow may leave only much later."""
LONGEST = 1e8
EXTENSION_STEPS = 100_000
"""The most integrator steps spent past the logged times looking for convergence; a stretch
[T, 2T] is started only if twice the previous stretch's steps still fit."""
RTOL, ATOL = 1e-9, 1e-13
STOPS = ("converged", "stalled", "longest", "budget")


@dataclass(frozen=True)
class FlowCurve:
    """The flow's loss at the logged ``times`` (``losses``), on the dense grid (``grid``,
    ``grid_losses``, through the extension), the final time and loss, the best loss the
    model can reach (``target``), why the extension stopped (``stop``, one of STOPS; the
    flow ``converged`` only on "converged"), the largest relative loss difference of the
    half-tolerance pass (``error``) and the integrator's steps."""

    times: np.ndarray
    losses: np.ndarray
    grid: np.ndarray
    grid_losses: np.ndarray
    final_time: float
    final_loss: float
    target: float
    stop: str
    error: float
    steps: int

    @property
    def converged(self) -> bool:
        return self.stop == "converged"

    @property
    def gap(self) -> float:
        """(final loss - target) / target."""
        return (self.final_loss - self.target) / self.target


def reachable_loss(loss: HeadsLoss) -> float:
    """The best loss the heads can reach: L_k with k = min(d, heads x rank) for separate keys
    and queries (Gamma has rank at most H R), L* = L_d for merged ones."""
    levels = rank_k_losses(loss.n, loss.sigma, loss.sigma_x, loss.sigma_w)
    k = loss.d if loss.kq == "merged" else min(loss.d, loss.heads * loss.rank)
    return float(levels[k])


def _is_converged(value: float, target: float) -> bool:
    return value - target <= CONVERGED_GAP * target


def _run(loss: HeadsLoss, theta0: np.ndarray, grid: np.ndarray, rtol: float, atol: float,
         progress: Callable[[float], None] | None, target: float | None
         ) -> tuple[np.ndarray, np.ndarray, int, str]:
    """(grid, losses, steps, stop): the flow on ``grid`` and then, unless ``target`` is None,
    on doubling chunks of POINTS_PER_DECADE / 3 points each until it converges or stops."""

    def field(theta: np.ndarray) -> np.ndarray:
        return -loss.gradient(theta)

    result = integrate(field, theta0, grid, rtol, atol, progress)
    times, thetas, steps = [result.times], [result.theta], result.steps
    spent, last = 0, result.steps / 2           # [T, 2T] costs about [0, T]
    stop, settled = "budget", False
    while target is not None:
        # converged at two ends in a row: the last stretch [T, 2T] shows the end plateau
        now = _is_converged(loss.loss(thetas[-1][-1]), target)
        end = times[-1][-1]
        stop = "converged" if now else "longest" if end >= LONGEST else "budget"
        if (now and settled) or end >= LONGEST or spent + 2 * last > EXTENSION_STEPS:
            break
        settled = now
        chunk = np.geomspace(end, 2 * end, POINTS_PER_DECADE // 3 + 1)[1:]
        more = integrate(field, thetas[-1][-1], chunk, rtol, atol, progress, t0=end)
        steps, spent, last = steps + more.steps, spent + more.steps, more.steps
        times.append(more.times)
        thetas.append(more.theta)
        before, after = loss.loss(thetas[-2][-1]), loss.loss(more.theta[-1])
        if not _is_converged(after, target) \
                and abs(before - after) <= STALLED * max(abs(after), 1e-300):
            stop = "stalled"
            break
    t = np.concatenate(times)
    theta = np.concatenate(thetas)
    return t, np.array([loss.loss(row) for row in theta]), steps, stop


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
    and on towards convergence; its error estimated by a second pass at rtol/2, atol/2."""
    times = np.asarray(times, dtype=np.float64)
    start, stop = times[0] / 100, times[-1]
    decades = max(np.log10(stop / start), 1.0)
    dense = np.geomspace(start, stop, int(decades * POINTS_PER_DECADE) + 1)
    grid = np.union1d(_apart(dense, times), times)
    target = reachable_loss(loss)
    t, losses, steps, reason = _run(loss, theta0, grid, rtol, atol, progress, target)
    t_half, losses_half, _, _ = _run(loss, theta0, t[t <= stop], rtol / 2, atol / 2, None,
                                     None)
    common = min(t.size, t_half.size)
    error = float(np.max(np.abs(losses[:common] - losses_half[:common])
                         / np.abs(losses_half[:common])))
    logged = np.searchsorted(t, times)
    return FlowCurve(times, losses[logged], t, losses, float(t[-1]), float(losses[-1]),
                     target, reason, error, steps)
