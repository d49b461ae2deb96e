"""The pure rules of the ``lu-asymptotic`` claims (``kinds``): numbers in, a verdict out, so
that each can be checked on synthetic results (tests/experiments/claims).

Convergence: the finite-d errors approach the asymptotic ones as e(d) = e + b/d + O(1/d^2).
The means over many pretraining sets at each d, with standard errors over the sets (the
spread between pretraining sets, not the held-out noise of one), are fitted by weighted least
squares to e + b/d; the intercept e_hat estimates the d -> inf error, with its standard error
from the fit. One rule: |e_hat - theory| <= tolerance. A theory off by 2 x tolerance or more
cannot pass where the right one does."""

from __future__ import annotations

import math
from collections.abc import Sequence

from iclab.utils.errors import ConfigError


def extrapolate(dims: Sequence[int], means: Sequence[float],
                stderrs: Sequence[float]) -> tuple[float, float]:
    """(e_hat, its standard error): the weighted least-squares intercept of means = e + b/d
    (weights 1/stderr^2), over at least two distinct dims with positive standard errors."""
    if len(dims) < 2 or len(set(dims)) != len(dims) or len(means) != len(dims) or len(
            stderrs) != len(dims) or not all(se > 0 and math.isfinite(se) for se in stderrs):
        raise ConfigError(f"the 1/d extrapolation needs two or more distinct d with positive "
                          f"standard errors, got d={list(dims)}, se={list(stderrs)}")
    weights = [1.0 / se ** 2 for se in stderrs]
    xs = [1.0 / d for d in dims]
    s0 = sum(weights)
    s1 = sum(w * x for w, x in zip(weights, xs, strict=True))
    s2 = sum(w * x * x for w, x in zip(weights, xs, strict=True))
    t0 = sum(w * y for w, y in zip(weights, means, strict=True))
    t1 = sum(w * x * y for w, x, y in zip(weights, xs, means, strict=True))
    det = s0 * s2 - s1 * s1
    intercept = (s2 * t0 - s1 * t1) / det
    return intercept, math.sqrt(s2 / det)


def converges(dims: Sequence[int], means: Sequence[float], stderrs: Sequence[float],
              theory: float, tolerance: float) -> tuple[bool, float, float]:
    """(holds, e_hat, se): holds when |e_hat - theory| <= tolerance (``extrapolate``)."""
    estimate, stderr = extrapolate(dims, means, stderrs)
    return abs(estimate - theory) <= tolerance, estimate, stderr


def ratio_matches(simulated: float, theory: float, tolerance: float) -> bool:
    """The kappa transition at one end of the grid: the simulated e_IDG / e_ICL within
    tolerance of the asymptotic one."""
    return abs(simulated - theory) <= tolerance
