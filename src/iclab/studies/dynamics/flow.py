"""Gradient flow d theta/dt = -grad L(theta), integrated by an adaptive Dormand-Prince 5(4)
Runge-Kutta method (the pair behind RK45) with a stated local error tolerance, and the global
error estimated by integrating again at half the tolerance (docs/theory.md section 18).

Each step's error estimate (the difference of the 5th- and 4th-order solutions) must satisfy
max_i |err_i| / (atol + rtol max(|theta_i|, |theta_new_i|)) <= 1; steps are clipped to land
exactly on every requested time, where the loss is evaluated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from iclab.utils.errors import ConfigError

_A = (
    (),
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
_B5 = np.array([35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0])
_B4 = np.array([5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100,
                1 / 40])
MAX_STEPS = 5_000_000


@dataclass(frozen=True)
class FlowResult:
    """The flow at the requested times: ``times`` (T,), ``theta`` (T, P), ``steps`` taken."""

    times: np.ndarray
    theta: np.ndarray
    steps: int


def integrate(field: Callable[[np.ndarray], np.ndarray], theta0: np.ndarray,
              times: Sequence[float] | np.ndarray, rtol: float = 1e-8, atol: float = 1e-12,
              progress: Callable[[float], None] | None = None, t0: float = 0.0) -> FlowResult:
    """Integrate theta' = field(theta) from theta0 at t0 (default 0) to each of ``times``
    (increasing, >= t0); ``progress(t)`` is called after every accepted step."""
    t_out = np.asarray(times, dtype=np.float64)
    if t_out.ndim != 1 or t_out.size == 0 or not np.all(np.isfinite(t_out)) \
            or t_out[0] < t0 or np.any(np.diff(t_out) <= 0):
        raise ConfigError("the flow's times must be finite, >= its start and strictly "
                          "increasing")
    if not (0 < rtol < 1 and atol > 0):
        raise ConfigError(f"rtol must be in (0, 1) and atol > 0; got {rtol}, {atol}")
    y = np.array(theta0, dtype=np.float64)
    t, steps = float(t0), 0
    out = np.empty((t_out.size, y.size))
    f = field(y)
    scale = atol + rtol * np.abs(y)
    h = 0.01 * float(np.max(np.abs(y) / scale)) / max(float(np.max(np.abs(f) / scale)), 1e-300)
    h = min(max(h, 1e-12), float(t_out[-1] - t) or 1.0)
    for index, target in enumerate(t_out):
        while t < target:
            step = min(h, target - t)
            k = [f]
            # a trial step too long for a stiff stretch can overflow: its error is then not
            # finite and the step is rejected below, so numpy's warnings would only be noise
            with np.errstate(over="ignore", invalid="ignore"):
                for row in _A[1:]:
                    k.append(field(y + step * sum(a * ki for a, ki in zip(row, k,
                                                                          strict=False))))
                y_new = y + step * sum(b * ki for b, ki in zip(_B5, k, strict=True))
                err = step * sum(e * ki for e, ki in zip(_B5 - _B4, k, strict=True))
                ratio = float(np.max(np.abs(err) / (atol + rtol * np.maximum(np.abs(y),
                                                                             np.abs(y_new)))))
            if not np.isfinite(ratio):
                ratio = 1e10
            steps += 1
            if steps > MAX_STEPS:
                raise ConfigError(f"the flow needed more than {MAX_STEPS} steps by t = {t:.4g};"
                                  " lower the final time or raise the tolerance")
            if ratio <= 1.0:
                t = target if step == target - t else t + step
                y, f = y_new, k[6]
                if progress is not None:
                    progress(t)
            h = step * min(5.0, max(0.2, 0.9 * max(ratio, 1e-10) ** -0.2))
        out[index] = y
    return FlowResult(t_out, out, steps)
