"""What the study adds to the outputs: result.json's WPGD read-out of the sequence models on
Gaussian families (weights, Gamma, its residual, its exact loss, the family's exact WPGD and
LSA optima; a ``RunOutput``), and the WPGD optimum in ``iclab theory --family
drifting-linear`` (a ``TheoryAddition``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from iclab.cli.theory.modes import TheoryAddition
from iclab.models.base import Model
from iclab.runs.outputs import RunOutput
from iclab.studies.sequence.family import DriftingLinear, drift_of
from iclab.studies.sequence.gla import GatedLinearAttention
from iclab.studies.sequence.h3 import H3
from iclab.studies.sequence.wpgd import wpgd_loss, wpgd_optimum
from iclab.tasks.base import TaskFamily
from iclab.utils.errors import ConfigError

if TYPE_CHECKING:
    from iclab.config.train import TrainConfig


class WPGDReadoutOutput(RunOutput):
    """result.json keys: wpgd_omega, wpgd_eta (tr Gamma / d), wpgd_residual, wpgd_complete,
    wpgd_readout_loss (the exact loss of the read-out), loss_star_wpgd, omega_star,
    loss_star_lsa and omega_error = ||omega - omega*|| / ||omega*||."""

    name = "wpgd read-out"

    def applies(self, model: Model, task: TaskFamily) -> bool:
        return isinstance(model, H3 | GatedLinearAttention) and drift_of(task) is not None

    def write(self, model: Model, task: TaskFamily, config: TrainConfig,
              path: Path) -> dict[str, Any]:
        assert isinstance(model, H3 | GatedLinearAttention)
        rho = drift_of(task)
        assert rho is not None
        readout = model.wpgd_readout(task.n)
        optimum = wpgd_optimum(task.d, task.n, task.sigma, rho)
        error = float(np.linalg.norm(readout.omega - optimum.omega)
                      / np.linalg.norm(optimum.omega))
        return {"wpgd_omega": readout.omega.tolist(),
                "wpgd_eta": float(np.trace(readout.gamma) / task.d),
                "wpgd_residual": readout.residual, "wpgd_complete": readout.complete,
                "wpgd_readout_loss": wpgd_loss(readout.omega, readout.gamma, task.sigma, rho),
                "loss_star_wpgd": optimum.loss, "omega_star": optimum.omega.tolist(),
                "loss_star_lsa": optimum.lsa_loss, "omega_error": error}


# iclab theory --family drifting-linear: the exact WPGD optimum beside the LSA's (an addition
# with no options of its own: it applies whenever the family drifts). The family's own
# optimum gives the rest: the LSA's Gamma* and loss, and the Kalman filter's Bayes risk.


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
