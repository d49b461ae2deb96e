"""Claim kinds on L-layer LSA runs (``lsa`` with ``layers``, ``parameterisation``, ``looped``):
their result.json holds the optimal L-step GD (``gd_steps_etas``, ``gd_steps_loss``,
``gd_steps_loss_stderr``) and, for the sparse parameterisation, the learned ``layer_steps``
(``iclab.analysis.depth``). Per site (the runs of a group that differ only in their seed):

- ``steps-loss``: value = the mean test loss over seeds; theory = the optimal L-step GD loss;
  holds when value <= theory + tolerance x se, se = the standard error of the mean test loss
  combined with that of the GD loss (0 when exact): a sparse model is L steps of
  preconditioned GD, so it cannot beat the best L-step GD in expectation.
- ``layer-steps``: value = the largest over seeds and layers of |a_l / eta_l - 1|, the learned
  steps and the optimal ones both sorted (``reference = "optimum"``: ``gd_steps_etas``;
  ``"theorem1"``: 1/(n+d+1+sigma^2), judged at the group's one-layer sites only); holds when
  value <= tolerance.
- ``loss-below`` (parameter ``than``: another group): value = the mean test loss; theory = the
  mean test loss of the site of ``than`` with the same family, d, n, sigma and axis values;
  holds when value <= theory + tolerance x se (both standard errors combined). One claim per
  site that has such a partner.
- ``falls-with`` (parameter ``axis``, e.g. layers; one claim per value of the other axes):
  value = the largest ratio of consecutive mean test losses along the axis (ascending);
  theory = the same ratio for the optimal GD losses (``gd_steps_loss``, or L* for a
  one-layer run); holds when value <= 1 - tolerance. With ``direction = "does-not-rise"``
  (what the theory gives for a model whose L + 1 layers contain its L layers, when nothing says
  by how much it falls) the tolerance is in standard errors: it holds when every consecutive
  ratio b / a <= 1 + tolerance x se(b / a), se from the two mean losses' standard errors.

These kinds draw one figure per section (``iclab.experiments.figures.depth``) covering the
groups their claims name, in place of those groups' test-loss figures.
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Any, ClassVar

import numpy as np

from iclab.config.train import TrainConfig
from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind, describe, seeds_phrase
from iclab.experiments.claims.needs import DEEP, SPARSE, first_unmet
from iclab.experiments.claims.parameters import ClaimParameter, choice
from iclab.experiments.figures.figure_file import FigureFile
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.results import RunRecord, Site, axis_value, gd_loss, sites
from iclab.tasks.base import TaskFamily
from iclab.theory.gaussian import eta_star_isotropic
from iclab.utils.errors import ConfigError

MATCH_KEYS = ("family", "d", "n", "sigma")
"""Config keys on which two groups' sites must agree to be compared (besides the axes)."""
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-")


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value or not set(value) <= _NAME_CHARS:
        raise ConfigError(f"must be a name of lower-case letters, digits and '-', got {value!r}")
    return value


def mean_loss(site: Site) -> tuple[float, float]:
    """The mean test loss over seeds and its standard error: (value, se)."""
    return site.mean("test_loss"), site.mean_stderr("test_loss")


def _require(record: RunRecord, keys: tuple[str, ...], group: str, kind: str) -> None:
    missing = [key for key in keys if key not in record.result]
    if missing:
        raise ConfigError(f"the {kind} claim on group {group!r}: run {record.point.run_id} has "
                          f"no {', '.join(missing)} (an L-layer lsa run: layers > 1, "
                          "parameterisation sparse or looped)")


def depth_groups(claims: list[ClaimSpec]) -> list[str]:
    """The groups a section's depth claims name (``group`` and ``than``), in order."""
    names = [c.group for c in claims] + [c.parameters["than"] for c in claims
                                         if "than" in c.parameters]
    return list(dict.fromkeys(names))


class DepthKind(ClaimKind):
    """A kind whose claims name the site's layers and parameterisation, and share one figure
    per section."""

    def text(self, spec: ClaimSpec, site: Site) -> str:
        return f"{spec.section}: {self.statement(spec)} [{describe(site, depth=True)}]"

    def figure_key(self, spec: ClaimSpec) -> tuple[str, str] | None:
        return spec.section, "depth"

    def figure_covers(self, claims: list[ClaimSpec]) -> set[tuple[str, str]]:
        return {(name, "loss") for name in depth_groups(claims)}

    def draw_figures(self, claims: list[ClaimSpec],
                     context: ClaimContext) -> list[FigureFile]:
        """Test loss against L for the section's groups, with the optimal L-step GD, the
        reference loss (the Bayes risk) of the claims on those groups, and the steps."""
        from iclab.experiments.figures.depth import panel_of
        from iclab.experiments.figures.groups import depth_section_figure

        spec, records, out_dir = context.sweep(f"the depth figure of {claims[0].section!r}")
        names = depth_groups(claims)
        bayes: dict[str, float] = {}
        for claim in spec.claims:
            if claim.group in names:
                kind = context.kind(claim.kind)
                for site in sites(spec, records, claim.group):
                    risk = kind.reference_loss(claim, site, context)
                    if risk is not None:
                        bayes[panel_of(site)] = risk
        groups = [(name, sites(spec, records, name)) for name in names]
        return [depth_section_figure(claims[0].section, groups, bayes, out_dir)]


class StepsLossClaim(DepthKind):
    name = "steps-loss"
    requires = (DEEP,)
    statements: ClassVar[dict[str, str]] = {
        "": "the trained model's test loss is at most the optimal L-step GD loss"}

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        for record in site.records:
            _require(record, ("gd_steps_loss",), spec.group, self.name)
        value, se = mean_loss(site)
        theory = float(np.mean([gd_loss(r)[0] for r in site.records]))
        se = math.hypot(se, max(gd_loss(r)[1] for r in site.records))
        layers = site.records[0].layers
        return self.claim(spec, site, value <= theory + spec.tolerance * se,
                          f"mean {seeds_phrase(site)} of the test loss (se {se:.2g}) vs the "
                          f"optimal {layers}-step GD loss; holds when "
                          f"value <= theory + {spec.tolerance:g} se", value, theory,
                          f"{spec.tolerance:g} se")


class LayerStepsClaim(DepthKind):
    name = "layer-steps"
    options: ClassVar[dict[str, tuple[str, ...]]] = {"reference": ("optimum", "theorem1")}
    statements: ClassVar[dict[str, str]] = {
        "optimum": "the learned per-layer steps equal the optimal L-step GD's",
        "theorem1": "the one layer's learned step equals 1/(n+d+1+sigma^2) (Theorem 1)",
    }

    def unmet(self, spec: ClaimSpec, config: TrainConfig, task: TaskFamily) -> str | None:
        judged = self.option(spec) == "optimum" or (config.depth() or 1) == 1  # theorem1: L=1
        return first_unmet((SPARSE,), config, task) if judged else None

    def check(self, spec: ClaimSpec, group_sites: list[Site],
              context: ClaimContext) -> list[Claim]:
        if self.option(spec) == "optimum":
            return super().check(spec, group_sites, context)
        ones = [s for s in group_sites if s.records[0].layers == 1]
        if not ones:
            raise ConfigError(f"the layer-steps claim on group {spec.group!r} with reference "
                              "theorem1 needs one-layer sites (layers = 1)")
        return [self.check_site(spec, site, context) for site in ones]

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        theorem1 = self.option(spec) == "theorem1"
        worst, theories = 0.0, []
        for record in site.records:
            _require(record, ("layer_steps", "gd_steps_etas"), spec.group, self.name)
            learned = sorted(float(a) for a in record.result["layer_steps"])
            if theorem1:
                task = record.point.config.task
                optimal = [eta_star_isotropic(task.n, task.d, task.sigma)]
            else:
                optimal = sorted(float(e) for e in record.result["gd_steps_etas"])
            worst = max(worst, *(abs(a / e - 1.0) for a, e in zip(learned, optimal,
                                                                 strict=True)))
            theories.append(optimal)
        reference = "1/(n+d+1+sigma^2)" if theorem1 else "the optimal L-step GD's steps"
        steps = ", ".join(f"{e:.4g}" for e in np.mean(theories, axis=0))
        return self.claim(spec, site, worst <= spec.tolerance,
                          f"largest {seeds_phrase(site)} and layers of |learned step / optimal "
                          f"- 1|, both sorted, against {reference} ({steps}); theory 0; holds "
                          f"when value <= tolerance", worst, 0.0)


def _match_key(site: Site, axes: tuple[str, ...]) -> tuple[Any, ...]:
    point = site.records[0].point
    return tuple(site.values[key] if key in site.values else axis_value(point, key)
                 for key in (*MATCH_KEYS, *axes))


class LossBelowClaim(DepthKind):
    name = "loss-below"
    parameters: ClassVar[dict[str, ClaimParameter]] = {
        "than": ClaimParameter("the group whose sites' test losses bound this group's", _name,
                               required=True)}
    statements: ClassVar[dict[str, str]] = {"": "the test loss is at most that of group {than}"}

    def check_groups(self, parameters: dict[str, Any], group: str, groups: set[str],
                     where: str) -> None:
        than = parameters["than"]
        if than not in groups or than == group:
            raise ConfigError(f"{where}: than must be another group, one of "
                              f"{sorted(groups - {group})}; got {than!r}")

    def statement(self, spec: ClaimSpec) -> str:
        return spec.statement or self.statements[""].format(than=spec.parameters["than"])

    def check(self, spec: ClaimSpec, group_sites: list[Site],
              context: ClaimContext) -> list[Claim]:
        if context.spec is None or context.records is None:
            raise ConfigError(f"the loss-below claim on group {spec.group!r} needs the spec "
                              "and the records of the sweep")
        than = spec.parameters["than"]
        axes = tuple(dict.fromkeys((*context.spec.group(spec.group).axes,
                                    *context.spec.group(than).axes)))
        partners = {_match_key(s, axes): s for s in sites(context.spec, context.records, than)}
        claims = []
        for site in group_sites:
            partner = partners.get(_match_key(site, axes))
            if partner is None:
                continue
            value, se = mean_loss(site)
            theory, other_se = mean_loss(partner)
            se = math.hypot(se, other_se)
            claims.append(self.claim(
                spec, site, value <= theory + spec.tolerance * se,
                f"mean {seeds_phrase(site)} of the test loss vs the mean of group {than}'s "
                f"site {partner.label or '(its only one)'} ({seeds_phrase(partner)}; se "
                f"{se:.2g}); holds when value <= theory + {spec.tolerance:g} se",
                value, theory, f"{spec.tolerance:g} se"))
        if not claims:
            raise ConfigError(f"the loss-below claim on group {spec.group!r}: no site of group "
                              f"{than!r} has the same {', '.join((*MATCH_KEYS, *axes))}")
        return claims


class FallsWithClaim(DepthKind):
    name = "falls-with"
    parameters: ClassVar[dict[str, ClaimParameter]] = {
        "axis": ClaimParameter("the group's axis along which the test loss falls", _name,
                               default="layers"),
        "direction": ClaimParameter(
            "falls (each step down by at least the tolerance, relative) or does-not-rise (no "
            "step up by more than tolerance standard errors)", choice("falls", "does-not-rise"),
            default="falls")}
    statements: ClassVar[dict[str, str]] = {
        "falls": "the test loss falls as {axis} grows",
        "does-not-rise": "the test loss does not rise as {axis} grows"}

    def statement(self, spec: ClaimSpec) -> str:
        template = self.statements[spec.parameters["direction"]]
        return spec.statement or template.format(axis=spec.parameters["axis"])

    def check(self, spec: ClaimSpec, group_sites: list[Site],
              context: ClaimContext) -> list[Claim]:
        axis = spec.parameters["axis"]
        if any(axis not in site.values for site in group_sites):
            raise ConfigError(f"the falls-with claim on group {spec.group!r}: axis {axis!r} "
                              f"is not one of the group's axes")
        lines: dict[tuple[tuple[str, Any], ...], list[Site]] = {}
        for site in group_sites:
            rest = tuple((k, v) for k, v in site.values.items() if k != axis)
            lines.setdefault(rest, []).append(site)
        claims = []
        for rest, line in lines.items():
            if len(line) < 2:
                raise ConfigError(f"the falls-with claim on group {spec.group!r} needs 2 or "
                                  f"more values of {axis}")
            line = sorted(line, key=lambda s: float(s.values[axis]))
            means = [mean_loss(s) for s in line]
            losses = [mean for mean, _ in means]
            optimal = [float(np.mean([gd_loss(r)[0] for r in s.records])) for s in line]
            value = max(b / a for a, b in pairwise(losses))
            theory = max(b / a for a, b in pairwise(optimal))
            if spec.parameters["direction"] == "falls":
                holds = value <= 1.0 - spec.tolerance
                rule = f"<= 1 - {spec.tolerance:g}"
                shown = f"<= {1 - spec.tolerance:g}"
            else:
                holds = all(second[0] / first[0]
                            <= 1.0 + spec.tolerance * _ratio_stderr(first, second)
                            for first, second in pairwise(means))
                rule = f"<= 1 + {spec.tolerance:g} se of each ratio"
                shown = f"<= 1 + {spec.tolerance:g} se"
            where = ", ".join(f"{k}={v}" for k, v in rest)
            steps = ", ".join(f"{s.values[axis]}" for s in line)
            setting = describe(line[0], depth=True, omit=axis)
            extra = "".join(f"; {k}={v}" for k, v in rest if f"{k}={v}" not in setting)
            text = (f"{spec.section}: {self.statement(spec)} [{setting}{extra}; "
                    f"{axis} = {steps}]")
            claims.append(Claim(
                text, holds,
                f"largest ratio of consecutive mean test losses ({seeds_phrase(line[0])}) as "
                f"{axis} grows (theory: the same for the optimal GD losses); holds when value "
                f"{rule}", value, theory, spec.tolerance, spec.section,
                spec.group, where, shown, spec.source))
        return claims


def _ratio_stderr(first: tuple[float, float], second: tuple[float, float]) -> float:
    """The standard error of b / a for two independent means (a, se_a), (b, se_b)."""
    (a, se_a), (b, se_b) = first, second
    return (b / a) * math.hypot(se_a / a, se_b / b)


DEPTH_KINDS = (StepsLossClaim, LayerStepsClaim, LossBelowClaim, FallsWithClaim)
