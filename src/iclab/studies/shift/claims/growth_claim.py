"""The ``shift-growth`` claim kind: the trained model's ratio to the Bayes loss under a shift
follows the optimal LSA's exact curve (docs/theory.md section 13).

Each run of the site is evaluated under the shift (``shift``) at each of ``values`` as the
``shift`` kind does (its ``ShiftMeasurement``, made by the sweep; the same folders, shared).
With r(v) = model_loss / bayes_loss (the Bayes loss of the TEST law, on the same prompts) and
v0 the training value, the measured growth is g(v) = r(v) / r(v0) with its standard error
(``iclab.studies.shift.growth.measured_growth``); the theory is g*(v), the same for the
training law's optimal one-layer LSA, its exact loss over the Bayes risk of each test law
(``iclab.studies.shift.growth.exact_growth``, the rows of ``iclab theory --shift``). The claim
holds when the largest |g(v) - g*(v)| / se over the seeds and values is at most ``tolerance``
(a number of standard errors; se combines the measured growth's and the theory's). Its value is
the seed mean of g at the value where the theory's growth is farthest from 1, and its theory
g* there. Figures: the measured growth of each site's seeds against the exact curve and,
under w-scale, the exact growth from 1 to the largest value against the training n (its fall
with n: Zhang, Frei and Bartlett's robustness), the runs' growths beside it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind, seeds_phrase
from iclab.experiments.claims.needs import GAUSSIAN, NOISE
from iclab.experiments.claims.parameters import ClaimParameter, choice, number_list
from iclab.experiments.figures.figure_file import FigureFile
from iclab.experiments.specs.claim_spec import ClaimSpec, RunMeasurement
from iclab.experiments.specs.results import RunRecord, Site, sites
from iclab.studies.shift.claims.shift_folder import (
    PROMPT_PARAMETERS,
    RATIO_KINDS,
    ShiftMeasurement,
    checked_values,
    measured_shift,
    training_value,
)
from iclab.studies.shift.growth import (
    Growth,
    exact_growth,
    exact_precision,
    growth_figure,
    growth_over_n,
    growth_over_n_figure,
    measured_growth,
)
from iclab.studies.shift.optimum import BayesCache
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.bayes import bayes_risk
from iclab.theory.sized_mean import mean_to_stderr
from iclab.utils.errors import ConfigError


def bayes_cache(context: ClaimContext) -> BayesCache:
    """The test laws' Bayes risks (the claims, figures and measurements of one report share
    them, and a report made again reads them from the sweep folder: each law's Monte Carlo
    risk is computed once, ``ClaimContext.stored``)."""
    cache: BayesCache = context.stored("shifted-bayes-risk", (bayes_risk, mean_to_stderr),
                                       list, tuple)
    return cache


def site_exact_growth(spec: ClaimSpec, record: RunRecord, context: ClaimContext,
                      measured: list[Growth]) -> Growth:
    """g*(v) of the optimal LSA of ``record``'s training law, its Bayes risks drawn to a tenth
    of the ``measured`` growths' relative standard error (``exact_precision``), cached per
    law, values and precision (and each test law's Bayes risk once per evaluation,
    ``bayes_cache``)."""
    kind, values = spec.parameters["shift"], spec.parameters["values"]
    config = record.point.config
    start = training_value(kind, config.to_json())
    relative = exact_precision(measured, start)
    key = ("shift-growth", config.hash(), kind, tuple(float(v) for v in values), relative)
    if key not in context.cache:
        task = config.make_task()
        if not isinstance(task, LinearGaussian):
            raise ConfigError(f"the shift-growth claim on group {spec.group!r} needs a linear "
                              f"Gaussian family, not {config.task.family!r}")
        context.cache[key] = exact_growth(task, kind, [float(v) for v in values], start,
                                          relative, cache=bayes_cache(context))
    growth: Growth = context.cache[key]
    return growth


class ShiftGrowthClaim(ClaimKind):
    name = "shift-growth"
    requires = (GAUSSIAN, NOISE)
    figure = "shift"
    parameters: ClassVar[dict[str, ClaimParameter]] = {
        "shift": ClaimParameter(f"the shift: {', '.join(RATIO_KINDS)}", choice(*RATIO_KINDS),
                                required=True),
        "values": ClaimParameter("the shifted values, a list of 2 to 50 numbers with the "
                                 "training value", number_list(2, 50), required=True),
        **PROMPT_PARAMETERS,
    }
    statements: ClassVar[dict[str, str]] = {
        "": "the ratio of the model's loss to the Bayes loss of the test law follows the "
            "optimal LSA's exact curve",
    }

    def validate_parameters(self, raw: dict[str, Any], where: str) -> dict[str, Any]:
        parameters = super().validate_parameters(raw, where)
        parameters["values"] = checked_values(parameters["shift"], parameters["values"], where,
                                              with_training_value=True)
        return parameters

    def measurements(self, parameters: dict[str, Any]) -> tuple[RunMeasurement, ...]:
        return (ShiftMeasurement(parameters),)

    def figure_key(self, spec: ClaimSpec) -> tuple[str, str] | None:
        return spec.group, "shift-growth"

    def draw_figures(self, claims: list[ClaimSpec],
                     context: ClaimContext) -> list[FigureFile]:
        """Per claim: the measured growth against the exact one; under w-scale also the
        exact growth against n with the runs beside it."""
        spec, records, out_dir = context.sweep(f"the figure of group {claims[0].group!r}")
        group_sites = sites(spec, records, claims[0].group)
        figures = []
        for claim in claims:
            kind = claim.parameters["shift"]
            measured, exact = {}, None
            for site in group_sites:
                start = training_value(kind, site.config)
                growths = [measured_growth(measured_shift(claim, record, context)[1]["rows"],
                                           start) for record in site.records]
                for record, growth in zip(site.records, growths, strict=True):
                    label = f"seed {record.point.config.run.seed}" + (
                        f", {site.label}" if site.label else "")
                    measured[label] = growth
                exact = exact or site_exact_growth(claim, site.records[0], context, growths)
            name = f"{claim.group}_growth_{kind}.png"
            growth_figure(kind, measured, exact, f"{claim.section}: {kind} shift, "
                          f"{claim.group}", out_dir / name)
            figures.append(FigureFile(claim.section, name, (
                f"Group {claim.group}, {kind} shift: the growth of (loss / Bayes loss of the "
                "test law) from the training value, each seed (bars 2 se), against the "
                "optimal one-layer LSA's exact growth (dashed; iclab theory --shift).")))
            if kind == "w-scale":
                name, caption = growth_over_n_file(claim, group_sites, context, out_dir)
                figures.append(FigureFile(claim.section, name, caption))
        return figures

    def statement(self, spec: ClaimSpec) -> str:
        values = ", ".join(f"{float(v):g}" for v in spec.parameters["values"])
        return f"{spec.parameters['shift']} shift ({values}): " + (
            spec.statement or self.statements[""])

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        kind = spec.parameters["shift"]
        worst = 0.0
        start = training_value(kind, site.config)
        measured = [measured_growth(measured_shift(spec, record, context)[1]["rows"], start)
                    for record in site.records]
        theory = site_exact_growth(spec, site.records[0], context, measured)
        for growth in measured:
            for value, (g, se) in growth.items():
                exact, exact_se = theory[value]
                spread = math.hypot(se, exact_se)
                if value != start:
                    worst = max(worst, abs(g - exact) / spread if spread > 0 else math.inf)
        extreme = max(theory, key=lambda v: abs(math.log(theory[v][0])))
        value = sum(growth[extreme][0] for growth in measured) / len(measured)
        metric = (f"largest {seeds_phrase(site)} and values of |g - g*| / standard error, g = "
                  f"(loss / Bayes loss of the test law) / (the same at the training value "
                  f"{training_value(kind, site.config):g}), g* = the same for the optimal LSA "
                  f"(exact loss; iclab theory --shift; Bayes risks to a relative standard "
                  f"error of {exact_precision(measured, start):.2g}); shown: the seed mean of "
                  f"g and g* at "
                  f"{extreme:g} ({spec.parameters['prompts']} prompts per value); holds when "
                  f"the largest is <= {spec.tolerance:g}")
        return self.claim(spec, site, worst <= spec.tolerance, metric, value,
                          theory[extreme][0], f"{spec.tolerance:g} se")


GROWTH_OVER_N = (10, 20, 40, 80, 160, 320, 640, 1280)
"""The training n of the exact curve of the w-scale growth (Zhang, Frei and Bartlett)."""


def growth_over_n_file(spec: ClaimSpec, group_sites: list[Site], context: ClaimContext,
                       out_dir: Path) -> tuple[str, str]:
    """Draw the exact w-scale growth from 1 to the claim's largest value against n, the
    trained runs' measured growths at their n beside it; (file name, caption)."""
    scale = max(float(v) for v in spec.parameters["values"])
    first = group_sites[0].records[0].point.config.make_task()
    if not isinstance(first, LinearGaussian):
        raise ConfigError(f"the shift-growth claim on group {spec.group!r} needs a linear "
                          "Gaussian family")
    exact = growth_over_n(first, GROWTH_OVER_N, scale, bayes_cache(context))
    trained: dict[int, list[float]] = {}
    for site in group_sites:
        for record in site.records:
            rows = measured_shift(spec, record, context)[1]["rows"]
            growth = measured_growth(rows, 1.0)[scale][0]
            trained.setdefault(record.point.config.task.n, []).append(growth)
    name = f"{spec.group}_growth_over_n.png"
    growth_over_n_figure(GROWTH_OVER_N, exact, trained, scale, out_dir / name)
    caption = (f"Group {spec.group}: the growth of (loss / Bayes loss of the test law) from "
               f"w-scale 1 to {scale:g} for the optimal one-layer LSA trained at each n "
               f"(exact, d = {first.d}, sigma = {first.sigma:g}; iclab theory --shift w-scale), "
               "with the trained runs' measured growths: at fixed n it grows like c^2, and "
               "it falls as n grows (Zhang, Frei and Bartlett's robustness is about long "
               "contexts).")
    return name, caption
