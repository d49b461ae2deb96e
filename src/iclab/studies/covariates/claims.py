"""Claim kinds of the Covariates section: non-Gaussian covariate laws and correlated contexts.

- ``gaussian-gap`` (per site): how far the Gaussian answer is off for the run's covariate law.
  eta_G = tr(Gamma_G)/d is the optimum of the same task with Gaussian covariates (same
  Sigma_x, Sigma_w, n, sigma; 1/(n+d+1+sigma^2) for identity covariances). The value is the
  learned gap eta_hat/eta_G - 1 (mean eta_hat over seeds), the theory the law's own gap
  eta*/eta_G - 1 (result.json's eta_star). Holds when |value - theory| <= tolerance and, where
  the law's gap is clearly away from 0 (|theory| >= separation x tolerance), the learned one is
  too (|value| >= separation x tolerance); for the Gaussian law (theory 0) the learned eta is
  then within tolerance of the Gaussian formula.
- ``n-eff`` (one claim per site, checked along the group's ``context_correlation`` axis): the
  effective context length n_eff of correlated contexts (result.json: the number of independent
  examples whose optimal loss equals the correlated one) against n. At rho = 0 it holds when
  |n_eff/n - 1| <= tolerance; at every larger rho when n_eff <= (1 - tolerance) x the n_eff of
  the next smaller rho (the correlated examples are worth fewer independent ones).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from iclab.config.task_section import option_values
from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind, seeds_phrase
from iclab.experiments.claims.needs import CORRELATED, READOUT
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.results import RunRecord, Site
from iclab.tasks.family_entry import matrix
from iclab.theory.gaussian import gaussian_optimum
from iclab.utils.errors import ConfigError


def gaussian_eta(record: RunRecord) -> float:
    """eta_G = tr(Gamma_G)/d of the Gaussian optimum with the run's d, n, sigma, Sigma_x and
    Sigma_w."""
    task = record.point.config.task
    cov_x, cov_w = (matrix(option_values(task).get(key)) for key in ("cov_x", "cov_w"))
    optimum = gaussian_optimum(task.n, task.sigma, cov_x, cov_w, task.d)
    return float(np.trace(optimum.gamma) / task.d)


def gap_holds(value: float, theory: float, tolerance: float, separation: float) -> bool:
    """|value - theory| <= tolerance, and |value| >= separation x tolerance where |theory| is."""
    clear = separation * tolerance
    return abs(value - theory) <= tolerance and (abs(theory) < clear or abs(value) >= clear)


class GaussianGapClaim(ClaimKind):
    name = "gaussian-gap"
    requires = (READOUT,)
    statements: ClassVar[dict[str, str]] = {
        "": "the learned step size eta_hat is off the Gaussian formula by the law's own gap "
            "eta*/eta_G - 1"}

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        eta_g = float(np.mean([gaussian_eta(r) for r in site.records]))
        value = site.mean("eta_hat") / eta_g - 1.0
        theory = site.mean("eta_star") / eta_g - 1.0
        return self.claim(
            spec, site, gap_holds(value, theory, spec.tolerance, spec.separation),
            f"mean {seeds_phrase(site)} of eta_hat/eta_G - 1 vs eta*/eta_G - 1, eta_G = "
            f"{eta_g:.6g} (the Gaussian optimum's, same covariances); holds when |value - "
            f"theory| <= tolerance and |value| >= {spec.separation:g} x tolerance where "
            f"|theory| is", value, theory, tolerance_label=f"{spec.tolerance:g}")


def correlation(site: Site) -> float:
    """The site's AR(1) rho (ConfigError when its runs have none)."""
    rho = option_values(site.records[0].point.config.task).get("context_correlation")
    if rho is None:
        raise ConfigError(f"claim kind n-eff needs runs with context_correlation; site "
                          f"{site.label!r} has none")
    return float(rho)


class EffectiveLengthClaim(ClaimKind):
    name = "n-eff"
    requires = (CORRELATED,)
    statements: ClassVar[dict[str, str]] = {
        "": "the effective context length n_eff equals n at rho = 0 and falls as the AR(1) "
            "correlation rho grows"}

    def check(self, spec: ClaimSpec, group_sites: list[Site],
              context: ClaimContext) -> list[Claim]:
        ordered = sorted(group_sites, key=correlation)
        claims: list[Claim] = []
        previous: float | None = None
        for site in ordered:
            raw = site.records[0].result.get("n_eff")
            value = float("inf") if raw is None else float(raw)
            rho, n = correlation(site), float(site.records[0].point.config.task.n)
            if rho == 0.0:
                holds = abs(value / n - 1.0) <= spec.tolerance
                metric = ("n_eff (theory: n); holds when |value/theory - 1| <= tolerance")
            elif previous is None:
                raise ConfigError(f"group {spec.group!r}: claim kind n-eff needs the "
                                  f"context_correlation axis to start at 0.0")
            else:
                holds = value <= (1.0 - spec.tolerance) * previous
                metric = (f"n_eff (theory: n); holds when value <= (1 - tolerance) x "
                          f"{previous:.6g}, the n_eff of the next smaller rho")
            claims.append(self.claim(spec, site, holds, metric, value, n))
            previous = value
        return claims


COVARIATE_KINDS: tuple[type[ClaimKind], ...] = (GaussianGapClaim, EffectiveLengthClaim)
"""The Covariates section's claim kinds, registered with the built-ins."""
