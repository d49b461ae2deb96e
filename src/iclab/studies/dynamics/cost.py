"""The cost of integrating the flow, estimated before it starts (docs/guide/dynamics.md).

Past the first drop the flow is stiff for an explicit method: Dormand-Prince's steps are
held near 3.3 / lambda, lambda the largest curvature of the loss in the parameters. At the
optimum Gamma* = S^{-1} X K^{-1} the loss's curvature in Gamma is at most 2n |S| |K| and
the heads' parameters are balanced factors of Gamma (two per head merged, three separate),
so lambda is about m |Gamma*|^{2(m-1)/m} 2n |S| |K| (m factors; spectral norms). Steps to t
are then about t lambda / 3.3 times a measured factor (``CALIBRATION``; within a factor 10 of
the steps taken on the cases of tests/theory/dynamics/test_cost.py), plus a few hundred for
the start, plus one for every time the flow must land on (each logged time at least)."""

from __future__ import annotations

import numpy as np

from iclab.studies.dynamics.heads_loss import HeadsLoss
from iclab.utils.errors import ConfigError

MAX_FLOW_STEPS = 300_000
"""The most integrator steps (estimated) the flow to the last logged time may take: about
two minutes of CPU at d = 4 (the half-tolerance pass repeats it)."""
CALIBRATION = {"merged": 1.8, "separate": 0.15}
STARTUP_STEPS = 500.0


def stiffness(loss: HeadsLoss) -> float:
    """lambda of the module doc: the loss's largest curvature in the parameters, estimated
    at the optimum."""
    S, K, X = loss.sigma_x, loss._K, loss._X  # type: ignore[attr-defined]
    curvature = 2 * loss.n * float(np.linalg.eigvalsh(S)[-1] * np.linalg.eigvalsh(K)[-1])
    gamma = float(np.linalg.norm(np.linalg.solve(S, X) @ np.linalg.inv(K), 2))
    if loss.normalise:     # the parameters make n Gamma
        curvature, gamma = curvature / loss.n**2, gamma * loss.n
    factors = 2 if loss.kq == "merged" else 3
    return float(factors * gamma ** (2 * (factors - 1) / factors) * curvature)


def check_landings(landings: int, limit: float = MAX_FLOW_STEPS) -> None:
    """ConfigError (one line) if landing on ``landings`` times alone passes ``limit``; cheap,
    so it can come before the times are listed."""
    if STARTUP_STEPS + landings > limit:
        raise ConfigError(f"the flow must land on {landings} logged times (limit "
                          f"{limit:.0f} integrator steps in all); log fewer times")


def estimated_steps(loss: HeadsLoss, end: float, landings: int = 0) -> float:
    """About how many integrator steps the flow from t = 0 to ``end`` takes, landing on
    ``landings`` given times on the way."""
    return STARTUP_STEPS + landings + CALIBRATION[loss.kq] * end * stiffness(loss) / 3.3


def check_flow_cost(loss: HeadsLoss, end: float, landings: int = 0,
                    limit: float = MAX_FLOW_STEPS) -> float:
    """The estimated steps to ``end`` landing on ``landings`` times, or ConfigError (one
    line, naming the limit and what would fit) past ``limit``."""
    steps = estimated_steps(loss, end, landings)
    if not steps <= limit:
        check_landings(landings, limit)
        longest = (limit - STARTUP_STEPS - landings) * 3.3 / (CALIBRATION[loss.kq]
                                                              * stiffness(loss))
        raise ConfigError(f"the flow to t = lr x steps = {end:.4g} needs about {steps:.2g} "
                          f"integrator steps (limit {limit:.0f}); give lr x steps at most "
                          f"{longest:.3g}")
    return steps
