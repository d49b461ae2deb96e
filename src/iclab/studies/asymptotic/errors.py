"""The asymptotic e_ICL and e_IDG at (tau, alpha, kappa, rho, lambda) (docs/theory.md
section 16): the closed forms where they apply (``formulas``: Result 1, kappa = inf), the
deterministic equivalent otherwise (``deterministic``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from iclab.studies.asymptotic.deterministic import ridge_errors
from iclab.studies.asymptotic.formulas import (
    check_inputs,
    infinite_diversity_error,
    ridgeless_e_icl,
)
from iclab.utils.errors import ConfigError

RIDGELESS = ("e_ICL: Result 1 (Lu et al., lam -> 0); e_IDG: the deterministic equivalent "
             "(docs/theory.md section 16.4)")
INFINITE_DIVERSITY = "kappa = inf: isotropic ridge (Marchenko-Pastur), e_ICL = e_IDG"
DETERMINISTIC = "deterministic equivalent (docs/theory.md section 16.4)"


@dataclass(frozen=True)
class AsymptoticErrors:
    """The d -> infinity test errors at (tau, alpha, kappa, rho, lam); ``method`` says which
    formula gave them."""

    tau: float
    alpha: float
    kappa: float
    rho: float
    lam: float
    e_icl: float
    e_idg: float
    method: str

    def to_json(self) -> dict[str, Any]:
        return {"tau": self.tau, "alpha": self.alpha,
                "kappa": "inf" if math.isinf(self.kappa) else self.kappa, "rho": self.rho,
                "lam": self.lam, "e_icl": self.e_icl, "e_idg": self.e_idg,
                "method": self.method}


def asymptotic_errors(tau: float, alpha: float, kappa: float, rho: float,
                      lam: float) -> AsymptoticErrors:
    """The asymptotic e_ICL and e_IDG at (tau, alpha, kappa, rho, lam) (checked inputs;
    ConfigError at lam = 0, tau = 1, where both diverge): kappa = inf by the isotropic ridge
    risk, lam = 0 by Result 1 (e_ICL) and the deterministic equivalent's limit (e_IDG), the
    rest by the deterministic equivalent."""
    check_inputs(tau, alpha, kappa, rho, lam)
    if lam == 0.0 and tau == 1.0:
        raise ConfigError("--tau 1 with --lam 0: the ridgeless error diverges at tau = 1 "
                          "(the double-descent peak); give --lam > 0 or another --tau")
    if math.isinf(kappa):
        value = infinite_diversity_error(tau, alpha, rho, lam)
        return AsymptoticErrors(tau, alpha, kappa, rho, lam, value, value, INFINITE_DIVERSITY)
    e_icl, e_idg = ridge_errors(tau, alpha, kappa, rho, lam)
    if lam == 0.0:
        return AsymptoticErrors(tau, alpha, kappa, rho, lam,
                                ridgeless_e_icl(tau, alpha, kappa, rho), e_idg, RIDGELESS)
    return AsymptoticErrors(tau, alpha, kappa, rho, lam, e_icl, e_idg, DETERMINISTIC)
