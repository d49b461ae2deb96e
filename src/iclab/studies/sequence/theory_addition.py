"""``iclab theory --family drifting-linear``: the exact WPGD optimum beside the LSA's (a
``TheoryAddition`` with no options of its own: it applies whenever the family drifts). The
family's own optimum gives the rest: the LSA's Gamma* and loss, and the Bayes risk of the
Kalman filter (``bayes_loss``, Monte Carlo over the inputs)."""

from __future__ import annotations

from typing import Any

from iclab.cli.theory.modes import TheoryAddition
from iclab.studies.sequence.family import DriftingLinear
from iclab.studies.sequence.wpgd import wpgd_optimum
from iclab.tasks.base import TaskFamily
from iclab.utils.errors import ConfigError


def _take(options: dict[str, Any]) -> bool | None:
    return True if options.get("family") == "drifting-linear" else None


def _check(request: bool, task: TaskFamily) -> None:
    if not isinstance(task, DriftingLinear):
        raise ConfigError(f"the WPGD optimum applies to drifting-linear, not {task.name!r}")


def _run(request: bool, task: TaskFamily, bayes_prompts: int, seed: int
         ) -> tuple[str, dict[str, Any]]:
    assert isinstance(task, DriftingLinear)
    optimum = wpgd_optimum(task.d, task.n, task.sigma, task.rho)
    keys = optimum.to_json()
    weights = ", ".join(f"{value:.4g}" for value in optimum.omega)
    text = (f"weighted preconditioned GD (exact): loss_star_wpgd = {optimum.loss:.6g} "
            f"(eta* = {optimum.eta:.6g}), uniform weights (the LSA's): "
            f"{optimum.lsa_loss:.6g}\n"
            f"optimal weights omega* (sum n): {weights}")
    return text, keys


WPGD_ADDITION = TheoryAddition("wpgd", lambda: [], _take, _check, _run)
