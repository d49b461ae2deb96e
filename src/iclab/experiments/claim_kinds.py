"""The built-in claim kinds, one class each (per site of the group unless said otherwise;
a site = the runs that differ only in their seed):

- ``eta``: the mean over seeds of eta_hat against eta* (``reference = "optimum"``:
  result.json's eta_star; ``"theorem1"``: 1/(n+d+1+sigma^2)); holds when
  |value/theory - 1| <= tolerance.
- ``isotropy`` (one claim per group): the largest isotropy error ||Gamma - eta_hat I||_F /
  ||Gamma||_F over all runs; the theory's is 0; holds when value <= tolerance.
- ``gamma``: the largest ||Gamma - target||_F / ||target||_F over seeds, target Gamma*
  (``target = "optimum"``) or eta* Sigma_x^-1 with eta* = 1/(n+d+1+sigma^2)
  (``"preconditioned"``, Theorem 2); the theory's is 0; holds when value <= tolerance.
- ``not-multiple``: the smallest relative distance min_c ||Gamma - c R||_F / ||Gamma||_F over
  seeds, R = I or Sigma_x^-1 (``of``); theory: the same distance for Gamma*; holds when
  value >= separation x tolerance ("clearly", default separation 5).
- ``test-loss``: the mean test loss over seeds against L*; holds when |value/theory - 1| <=
  tolerance.
- ``above-bayes``: the mean test loss against the Bayes-optimal (ridge) risk (Monte Carlo,
  linear Gaussian only); holds when value >= (1 + separation x tolerance) x theory.
- ``shift``: the runs under a shifted test law (``iclab.experiments.shift_claims``).
- ``shift-growth``: their ratio to the Bayes loss against the optimal LSA's exact curve
  (``iclab.experiments.shift_growth_claims``).
- ``steps-loss``, ``layer-steps``, ``loss-below``, ``falls-with``: L-layer runs against the
  optimal L-step GD and against each other (``iclab.experiments.depth_claims``).
- ``gaussian-gap``, ``n-eff``: non-Gaussian covariate laws against the Gaussian formula, and the
  effective context length of correlated contexts (``iclab.experiments.covariate_claims``).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from iclab.errors import ConfigError
from iclab.experiments.claims import Claim, ClaimContext, ClaimKind, ClaimRegistry, seeds_phrase
from iclab.experiments.covariate_claims import COVARIATE_KINDS
from iclab.experiments.depth_claims import DEPTH_KINDS
from iclab.experiments.results import RunRecord, Site
from iclab.experiments.shift_claims import ShiftClaim
from iclab.experiments.shift_growth_claims import ShiftGrowthClaim
from iclab.experiments.spec import ClaimSpec
from iclab.theory.bayes import bayes_risk
from iclab.theory.gaussian import eta_star_isotropic

BAYES_PROMPTS = 20_000


def inverse_cov_x(record: RunRecord) -> np.ndarray:
    """Sigma_x^-1 of a run: (d, d)."""
    task = record.point.config.task
    if task.cov_x is None:
        return np.eye(task.d)
    return np.linalg.inv(np.asarray(task.cov_x, dtype=np.float64))


def theorem1_eta(record: RunRecord) -> float:
    task = record.point.config.task
    return eta_star_isotropic(task.n, task.d, task.sigma)


def relative_error(gamma: np.ndarray, target: np.ndarray) -> float:
    return float(np.linalg.norm(gamma - target) / np.linalg.norm(target))


def distance_from_multiple(gamma: np.ndarray, reference: np.ndarray) -> float:
    """min_c ||gamma - c reference||_F / ||gamma||_F (0 when gamma is a multiple)."""
    c = float(np.sum(gamma * reference) / np.sum(reference * reference))
    return float(np.linalg.norm(gamma - c * reference) / np.linalg.norm(gamma))


def gamma_target(record: RunRecord, target: str) -> np.ndarray:
    """Gamma* from result.json, or eta* Sigma_x^-1 (Theorem 2's closed form): (d, d)."""
    if target == "optimum":
        return record.gamma_star
    return theorem1_eta(record) * inverse_cov_x(record)


def multiple_reference(record: RunRecord, of: str) -> np.ndarray:
    """I or Sigma_x^-1 of a run: (d, d)."""
    return np.eye(record.point.config.task.d) if of == "identity" else inverse_cov_x(record)


def relative_holds(value: float, theory: float, tolerance: float) -> bool:
    return abs(value / theory - 1.0) <= tolerance


class EtaClaim(ClaimKind):
    name = "eta"
    figure = "eta"
    options: ClassVar[dict[str, tuple[str, ...]]] = {"reference": ("optimum", "theorem1")}
    statements: ClassVar[dict[str, str]] = {
        "theorem1": "the learned step size eta_hat equals 1/(n+d+1+sigma^2)",
        "optimum": "the learned step size eta_hat equals the optimum's eta*",
    }

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        records, option = site.records, self.option(spec)
        if option == "theorem1":
            theory = float(np.mean([theorem1_eta(r) for r in records]))
            reference = "1/(n+d+1+sigma^2)"
        else:
            theory, reference = site.mean("eta_star"), "the optimum's eta*"
            stderr = records[0].result.get("eta_star_stderr")
            if stderr:
                reference += f" (Monte Carlo, standard error {stderr:.2g})"
        value = site.mean("eta_hat")
        return self.claim(spec, site, relative_holds(value, theory, spec.tolerance),
                          f"mean {seeds_phrase(site)} of eta_hat vs {reference}; holds when "
                          f"|value/theory - 1| <= tolerance", value, theory)


class TestLossClaim(ClaimKind):
    name = "test-loss"
    figure = "loss"
    statements: ClassVar[dict[str, str]] = {
        "": "the trained LSA's test loss equals the optimal LSA loss L*"}

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        value, theory = site.mean("test_loss"), site.mean("loss_star")
        return self.claim(spec, site, relative_holds(value, theory, spec.tolerance),
                          f"mean {seeds_phrase(site)} of the test loss vs L*; holds when "
                          f"|value/theory - 1| <= tolerance", value, theory)


class GammaClaim(ClaimKind):
    name = "gamma"
    figure = "gamma"
    options: ClassVar[dict[str, tuple[str, ...]]] = {"target": ("optimum", "preconditioned")}
    statements: ClassVar[dict[str, str]] = {
        "optimum": "the learned Gamma equals the optimal Gamma*",
        "preconditioned": "the learned Gamma equals eta* Sigma_x^-1 "
                          "(one step of GD preconditioned by Sigma_x^-1)",
    }

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        option = self.option(spec)
        value = max(relative_error(r.gamma, gamma_target(r, option)) for r in site.records)
        name = "Gamma*" if option == "optimum" else "eta* Sigma_x^-1"
        return self.claim(spec, site, value <= spec.tolerance,
                          f"largest {seeds_phrase(site)} of ||Gamma - {name}||_F / ||{name}||_F;"
                          f" holds when value <= tolerance", value, 0.0)


class NotMultipleClaim(ClaimKind):
    name = "not-multiple"
    figure = "gamma"
    options: ClassVar[dict[str, tuple[str, ...]]] = {"of": ("identity", "inverse-cov-x")}
    statements: ClassVar[dict[str, str]] = {
        "identity": "the learned Gamma is clearly not a multiple of the identity",
        "inverse-cov-x": "the learned Gamma is clearly not a multiple of Sigma_x^-1",
    }

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        option = self.option(spec)
        name = "I" if option == "identity" else "Sigma_x^-1"
        value = min(distance_from_multiple(r.gamma, multiple_reference(r, option))
                    for r in site.records)
        first = site.records[0]
        theory = distance_from_multiple(first.gamma_star, multiple_reference(first, option))
        return self.claim(spec, site, value >= spec.separation * spec.tolerance,
                          f"smallest {seeds_phrase(site)} of min_c ||Gamma - c {name}||_F / "
                          f"||Gamma||_F (theory: Gamma*'s); holds when value >= "
                          f"{spec.separation:g} x tolerance", value, theory)


class AboveBayesClaim(ClaimKind):
    name = "above-bayes"
    figure = "loss"
    statements: ClassVar[dict[str, str]] = {
        "": "the trained LSA's test loss stays clearly above the Bayes-optimal "
        "(ridge) loss"}

    def bayes(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> tuple[float, float]:
        """The Bayes risk of a linear Gaussian site (Monte Carlo, cached in the context)."""
        key = (spec.group, site.label)
        if key not in context.cache:
            config = site.records[0].point.config
            task = config.make_task()
            if not task.gaussian:
                raise ConfigError(f"group {spec.group!r}: the Bayes risk needs linear Gaussian "
                                  f"runs, not {config.task.family!r}")
            sigma_x, sigma_w = getattr(task, "sigma_x"), getattr(task, "sigma_w")  # noqa: B009
            context.cache[key] = bayes_risk(task.n, task.sigma, sigma_x, sigma_w,
                                            prompts=BAYES_PROMPTS, seed=0)
        risk: tuple[float, float] = context.cache[key]
        return risk

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        risk, _ = self.bayes(spec, site, context)
        value = site.mean("test_loss")
        return self.claim(spec, site, value >= (1 + spec.separation * spec.tolerance) * risk,
                          f"mean {seeds_phrase(site)} of the test loss vs the Bayes risk "
                          f"(Monte Carlo, {BAYES_PROMPTS} prompts); holds when value >= "
                          f"(1 + {spec.separation:g} x tolerance) x theory", value, risk)


class IsotropyClaim(ClaimKind):
    name = "isotropy"
    statements: ClassVar[dict[str, str]] = {
        "": "the learned Gamma is a multiple of the identity (plain one-step GD)"}

    def check(self, spec: ClaimSpec, group_sites: list[Site],
              context: ClaimContext) -> list[Claim]:
        records = [r for site in group_sites for r in site.records]
        value = max(float(r.result["isotropy_err"]) for r in records)
        return [Claim(f"{spec.section}: {self.statement(spec)} [group {spec.group}: "
                      f"{len(records)} runs]", value <= spec.tolerance,
                      "largest over runs of ||Gamma - eta_hat I||_F / ||Gamma||_F; "
                      "holds when value <= tolerance",
                      value, 0.0, spec.tolerance, spec.section, spec.group, "",
                      source=spec.source)]


def register_builtin_claims(registry: ClaimRegistry) -> None:
    """Register iclab's claim kinds, exactly as a new kind would be registered."""
    for kind in (EtaClaim(), IsotropyClaim(), GammaClaim(), NotMultipleClaim(),
                 TestLossClaim(), AboveBayesClaim(), ShiftClaim(), ShiftGrowthClaim(),
                 *(kind_class() for kind_class in DEPTH_KINDS),
                 *(kind_class() for kind_class in COVARIATE_KINDS)):
        registry.register(kind)
