"""``FamilyOptimum``: the optimal one-layer LSA of a task family, however it was computed.

Every route to an optimum (``iclab.theory.family_optimum``, ``iclab.studies.covariates.optimum``)
returns this one record, so the CLI, the evaluation and the report read a single shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

CLOSED_FORM, MONTE_CARLO = "closed-form", "monte-carlo"


@dataclass(frozen=True)
class FamilyOptimum:
    """The optimal LSA of a family.

    gamma: (d, d) Gamma*; eta: the optimal step size where Gamma* = eta I (else None);
    loss: the optimal LSA loss; isotropic: whether Gamma* = eta I; method: "closed-form" or
    "monte-carlo"; stderr: standard errors of the Monte Carlo values by name ("eta", "loss",
    "gamma"), None for closed forms; bayes_loss (and its stderr): the Bayes risk where defined
    (linear Gaussian families, when asked for), else None; draws: Monte Carlo sample size;
    n_eff: for correlated contexts, the number of independent examples whose optimal loss is
    ``loss`` (docs/theory.md section 12), else None.
    """

    gamma: np.ndarray
    eta: float | None
    loss: float
    isotropic: bool
    method: str
    stderr: dict[str, Any] | None = None
    bayes_loss: float | None = None
    bayes_loss_stderr: float | None = None
    draws: int | None = None
    n_eff: float | None = None

    @property
    def eta_or_trace(self) -> float:
        """eta where isotropic, else tr(Gamma*)/d."""
        return self.eta if self.eta is not None else float(np.trace(self.gamma) / len(self.gamma))

    def to_json(self) -> dict[str, Any]:
        """JSON-ready: gamma as nested lists, every other field as is, except an infinite
        n_eff (a loss at the noise floor), which becomes null: JSON has no infinity."""
        n_eff = self.n_eff if self.n_eff is not None and math.isfinite(self.n_eff) else None
        return {
            "gamma": self.gamma.tolist(), "eta": self.eta, "loss": self.loss,
            "bayes_loss": self.bayes_loss, "bayes_loss_stderr": self.bayes_loss_stderr,
            "method": self.method, "stderr": self.stderr, "isotropic": self.isotropic,
            "draws": self.draws, "n_eff": n_eff,
        }
