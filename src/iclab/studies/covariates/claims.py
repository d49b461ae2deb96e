"""Claim kinds of the Covariates section: non-Gaussian covariate laws and correlated contexts.

- ``gaussian-gap`` (per site): how far the Gaussian answer is off for the run's covariate law.
  eta_G = tr(Gamma_G)/d is the optimum of the same task with Gaussian covariates (same
  Sigma_x, Sigma_w, n, sigma; 1/(n+d+1+sigma^2) for identity covariances). The value is the
  learned gap eta_hat/eta_G - 1 (mean eta_hat over seeds), the theory the law's own gap
  eta*/eta_G - 1 (result.json's eta_star). One rule: holds when |value - theory| <= tolerance
  (absolute). Where the law's gap exceeds the tolerance this already says the learned eta is
  off the Gaussian formula (by at least the gap minus the tolerance); for the Gaussian law
  (theory 0) it says the learned eta is within the tolerance of it.
- ``n-eff`` (per site): the trained model against the effective context length n_eff of
  correlated contexts (result.json: the real m whose optimal loss with m independent examples,
  L*_ind(m), equals the correlated optimum's L*; docs/theory.md section 12.4). The value is the
  effective length of the trained model's measured loss, n_hat = L*_ind^-1(mean test loss over
  seeds) (the same bisection, ``effective_context_length``); the theory is n_eff. Holds when
  |n_hat / n_eff - 1| <= tolerance. The measured loss is independent of the correlated theory,
  so a wrong L* (hence n_eff) fails; a relative tolerance on n is about 1.7 times one on the
  loss (d = 5, n = 20, sigma = 0.5), so the group needs a precise test loss (eval_prompts).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind, seeds_phrase
from iclab.experiments.claims.needs import CORRELATED, READOUT
from iclab.experiments.claims.targets import run_covariances, run_gaussian_optimum
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.results import RunRecord, Site
from iclab.studies.covariates.correlated import effective_context_length
from iclab.utils.errors import ConfigError


def gaussian_eta(record: RunRecord) -> float:
    """eta_G = tr(Gamma_G)/d of the Gaussian optimum with the run's d, n, sigma, Sigma_x and
    Sigma_w."""
    return float(np.trace(run_gaussian_optimum(record).gamma) / record.point.config.task.d)


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
            spec, site, abs(value - theory) <= spec.tolerance,
            f"mean {seeds_phrase(site)} of eta_hat/eta_G - 1 vs eta*/eta_G - 1, eta_G = "
            f"{eta_g:.6g} (the Gaussian optimum's, same covariances); holds when |value - "
            f"theory| <= tolerance", value, theory, tolerance_label=f"{spec.tolerance:g}")


def covariances(record: RunRecord) -> tuple[np.ndarray, np.ndarray]:
    """The run's Sigma_x and Sigma_w (identity where the run sets none)."""
    cov_x, cov_w = run_covariances(record)
    eye = np.eye(record.point.config.task.d)
    return (eye if cov_x is None else cov_x), (eye if cov_w is None else cov_w)


class EffectiveLengthClaim(ClaimKind):
    name = "n-eff"
    requires = (CORRELATED,)
    statements: ClassVar[dict[str, str]] = {
        "": "the trained model's test loss is worth n_eff independent examples, the "
            "theory's effective context length"}

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        record = site.records[0]
        raw = [r.result.get("n_eff") for r in site.records]
        values = [float(value) for value in raw if value is not None]
        if len(values) != len(raw):
            raise ConfigError(f"claim kind n-eff: site {site.label!r} has no finite n_eff "
                              f"(result.json writes null for an infinite one)")
        theory = float(np.mean(values))
        loss = site.mean("test_loss")
        sigma_x, sigma_w = covariances(record)
        value = effective_context_length(loss, record.point.config.task.sigma, sigma_x,
                                         sigma_w)
        holds = bool(np.isfinite(value)) and abs(value / theory - 1.0) <= spec.tolerance
        return self.claim(
            spec, site, holds,
            f"n_hat = L*_ind^-1(mean {seeds_phrase(site)} of the test loss, {loss:.6g}): "
            f"the independent examples whose optimal loss equals it, vs the theory's n_eff; "
            f"holds when |value/theory - 1| <= tolerance", value, theory)


COVARIATE_KINDS: tuple[type[ClaimKind], ...] = (GaussianGapClaim, EffectiveLengthClaim)
"""The Covariates section's claim kinds, registered with the built-ins."""
