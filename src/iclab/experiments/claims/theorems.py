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

Figures: ``eta`` claims draw eta_hat against the group's axis (or per site); ``gamma`` and
``not-multiple`` claims of a group share heatmaps of the learned Gamma beside each claim's
target; ``test-loss`` and ``above-bayes`` claims of a group share the test loss against its
axis with L* and the Bayes risk.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import ClassVar

import numpy as np

from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind, seeds_phrase
from iclab.experiments.claims.needs import GAUSSIAN, READOUT
from iclab.experiments.claims.targets import (
    GAMMA_NAMES,
    MULTIPLE_NAMES,
    distance_from_multiple,
    gamma_target,
    multiple_reference,
    relative_error,
    relative_holds,
    theorem1_eta,
)
from iclab.experiments.figures.figure_file import FigureFile
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.results import RunRecord, Site, sites
from iclab.theory.bayes import bayes_risk_to_stderr
from iclab.theory.sized_mean import SizedMean, mean_to_stderr
from iclab.utils.errors import ConfigError

BAYES_STDERR_SHARE = 0.1
"""The above-bayes claim draws the Monte Carlo Bayes risk until its standard error is at most
this share of the tolerance, relative to the risk: the theory's own noise moves the threshold
(1 + separation x tolerance) x risk by a tenth of a tolerance at most."""

def _group_sites(claims: list[ClaimSpec],
                 context: ClaimContext) -> tuple[tuple[str, ...], list[Site], Path]:
    """The axes and sites of the claims' group, and the sweep folder."""
    spec, records, out_dir = context.sweep(f"the figure of group {claims[0].group!r}")
    return spec.group(claims[0].group).axes, sites(spec, records, claims[0].group), out_dir


class GammaFigureKind(ClaimKind):
    """A kind whose claims on a group share heatmaps of the learned Gamma (its read-out's),
    each claim adding its own ``panels``."""

    requires = (READOUT,)

    def figure_key(self, spec: ClaimSpec) -> tuple[str, str] | None:
        return spec.group, "gamma"

    def panels(self, spec: ClaimSpec, record: RunRecord) -> list[tuple[str, np.ndarray]]:
        """What the claim compares the learned Gamma with: titled (d, d) matrices."""
        return []

    def draw_figures(self, claims: list[ClaimSpec],
                     context: ClaimContext) -> list[FigureFile]:
        from iclab.experiments.figures.groups import gamma_figures

        _, group_sites, out_dir = _group_sites(claims, context)
        kinds = [context.kind(claim.kind) for claim in claims]

        def panels_of(record: RunRecord) -> list[tuple[str, np.ndarray]]:
            return [panel for kind, claim in zip(kinds, claims, strict=True)
                    if isinstance(kind, GammaFigureKind) for panel in kind.panels(claim, record)]

        return gamma_figures(claims[0].section, claims[0].group, group_sites, panels_of,
                             out_dir)


class LossFigureKind(ClaimKind):
    """A kind whose claims on a group share the test loss against the group's axis, with L*
    and the ``reference_loss`` of the first claim that has one."""

    def figure_key(self, spec: ClaimSpec) -> tuple[str, str] | None:
        return spec.group, "loss"

    def draw_figures(self, claims: list[ClaimSpec],
                     context: ClaimContext) -> list[FigureFile]:
        from iclab.experiments.figures.groups import loss_figure, only_axis

        axes, group_sites, out_dir = _group_sites(claims, context)
        axis = only_axis(axes)
        if axis is None:
            return []
        risks: list[float] | None = None
        for claim in claims:
            kind = context.kind(claim.kind)
            values = [kind.reference_loss(claim, site, context) for site in group_sites]
            if all(value is not None for value in values):
                risks = [float(value) for value in values if value is not None]
                break
        return [loss_figure(claims[0].section, claims[0].group, group_sites, axis, risks,
                            out_dir)]


class EtaClaim(ClaimKind):
    name = "eta"
    requires = (READOUT,)
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

    def figure_key(self, spec: ClaimSpec) -> tuple[str, str] | None:
        return spec.group, "eta"

    def draw_figures(self, claims: list[ClaimSpec],
                     context: ClaimContext) -> list[FigureFile]:
        from iclab.experiments.figures.groups import eta_figure, only_axis

        axes, group_sites, out_dir = _group_sites(claims, context)
        first = claims[0]
        return [eta_figure(first.section, first.group, group_sites, only_axis(axes),
                           first.options["reference"], first.tolerance, out_dir)]


class TestLossClaim(LossFigureKind):
    name = "test-loss"
    statements: ClassVar[dict[str, str]] = {
        "": "the trained LSA's test loss equals the optimal LSA loss L*"}

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        value, theory = site.mean("test_loss"), site.mean("loss_star")
        return self.claim(spec, site, relative_holds(value, theory, spec.tolerance),
                          f"mean {seeds_phrase(site)} of the test loss vs L*; holds when "
                          f"|value/theory - 1| <= tolerance", value, theory)


class GammaClaim(GammaFigureKind):
    name = "gamma"
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

    def panels(self, spec: ClaimSpec, record: RunRecord) -> list[tuple[str, np.ndarray]]:
        target = gamma_target(record, spec.options["target"])
        return [(GAMMA_NAMES[spec.options["target"]], target),
                ("difference learned - target", record.gamma - target)]


class NotMultipleClaim(GammaFigureKind):
    name = "not-multiple"
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

    def panels(self, spec: ClaimSpec, record: RunRecord) -> list[tuple[str, np.ndarray]]:
        reference = multiple_reference(record, spec.options["of"])
        c = float(np.sum(record.gamma * reference) / np.sum(reference * reference))
        return [(f"nearest c {MULTIPLE_NAMES[spec.options['of']]}", c * reference)]


class AboveBayesClaim(LossFigureKind):
    name = "above-bayes"
    requires = (GAUSSIAN,)
    statements: ClassVar[dict[str, str]] = {
        "": "the trained LSA's test loss stays clearly above the Bayes-optimal "
        "(ridge) loss"}

    def bayes(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> SizedMean:
        """The Bayes risk of a linear Gaussian site, by Monte Carlo to a relative standard
        error of ``BAYES_STDERR_SHARE`` x tolerance (computed once per sweep folder:
        ``ClaimContext.stored``)."""
        config = site.records[0].point.config
        task = config.make_task()
        if not task.gaussian:
            raise ConfigError(f"group {spec.group!r}: the Bayes risk needs linear Gaussian "
                              f"runs, not {config.task.family!r}")
        sigma_x, sigma_w = getattr(task, "sigma_x"), getattr(task, "sigma_w")  # noqa: B009
        relative = BAYES_STDERR_SHARE * spec.tolerance
        stored = context.stored("bayes-risk-sized", (bayes_risk_to_stderr, mean_to_stderr),
                                dataclasses.asdict, lambda data: SizedMean(**data))
        key = (task.n, task.sigma, np.asarray(sigma_x, dtype=np.float64).tobytes(),
               np.asarray(sigma_w, dtype=np.float64).tobytes(), relative, 0)
        if key not in stored:
            stored[key] = bayes_risk_to_stderr(task.n, task.sigma, sigma_x, sigma_w,
                                               relative=relative, seed=0)
        risk: SizedMean = stored[key]
        return risk

    def reference_loss(self, spec: ClaimSpec, site: Site,
                       context: ClaimContext) -> float | None:
        return self.bayes(spec, site, context).mean

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        risk = self.bayes(spec, site, context)
        value = site.mean("test_loss")
        drawn = (f"Monte Carlo, {risk.draws} prompts: standard error {risk.stderr:.2g}, "
                 f"{'at most' if risk.reached else 'NOT within'} "
                 f"{BAYES_STDERR_SHARE:g} x tolerance of it" if risk.draws else "exactly 0")
        return self.claim(spec, site, value >= (1 + spec.separation * spec.tolerance)
                          * risk.mean and risk.reached,
                          f"mean {seeds_phrase(site)} of the test loss vs the Bayes risk "
                          f"({drawn}); holds when value >= (1 + {spec.separation:g} x "
                          "tolerance) x theory", value, risk.mean)


class IsotropyClaim(ClaimKind):
    name = "isotropy"
    requires = (READOUT,)
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


THEOREM_KINDS: tuple[type[ClaimKind], ...] = (
    EtaClaim, IsotropyClaim, GammaClaim, NotMultipleClaim, TestLossClaim, AboveBayesClaim)
"""The kinds of the paper's theorems, registered with the built-ins in this order."""
