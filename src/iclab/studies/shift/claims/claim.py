"""The ``shift`` claim kind: trained models under shifted test laws (``iclab shift``), judged.

Each run of the claim's group is evaluated by ``iclab.studies.shift.run.shift_run`` under one shift
(``shift``: n, sigma, x-scale, query-scale, w-scale, w-mean) at each of ``values``, on
``prompts`` fresh prompts per value drawn with ``seed``: that is the claim's measurement
(``ShiftMeasurement``), made by the sweep once the runs are trained. The outputs go to a folder
of the run, ``runs/<run_id>/shift-<shift>-<hash of values, prompts, seed>/``, and are reused
when its shift.json and shift.png are there, so a sweep run again costs nothing. The verdict
reads shift.json only, and the report copies shift.png. Measures (``measure``):

- ``exact-agreement``: value = the largest |model_loss - exact_loss| / model_loss_stderr over
  the seeds and values (exact_loss: the exact population loss of the model's linear read-out
  under the test law; models without one are refused); theory 0; holds when value <=
  tolerance (a number of standard errors, e.g. 4).
- ``ratio-bounded`` / ``ratio-grows``: with r(v) = model_loss / bayes_loss at value v (the
  Bayes loss of the TEST law, measured on the same prompts), a seed's value is
  max_v r(v) / r(training value), the growth of the ratio over the shifted range; the claim's
  value is the largest over seeds (bounded) or the smallest (grows); holds when value <=
  tolerance (bounded) or >= tolerance (grows). Theory: the same growth for one-step GD with
  the training optimum's Gamma* (its exact loss over the same Bayes losses), the optimal
  one-layer LSA.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from iclab.config.train import TrainConfig
from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind, seeds_phrase
from iclab.experiments.claims.needs import GAUSSIAN, NOISE, READOUT, first_unmet
from iclab.experiments.claims.parameters import ClaimParameter, choice, number_list
from iclab.experiments.figures.figure_file import FigureFile
from iclab.experiments.figures.measurement_table import Measurement
from iclab.experiments.specs.claim_spec import ClaimSpec, RunMeasurement
from iclab.experiments.specs.measurement_spec import MeasurementSpec
from iclab.experiments.specs.results import RunRecord, Site, sites
from iclab.studies.shift.claims.figure import shift_figure
from iclab.studies.shift.claims.measurements import (
    parse_shift_measurement,
    report_shift_measurement,
)
from iclab.studies.shift.claims.shift_folder import (
    PROMPT_PARAMETERS,
    ShiftMeasurement,
    checked_values,
    measured_shift,
    training_value,
)
from iclab.studies.shift.laws import SHIFT_KINDS
from iclab.tasks.base import TaskFamily
from iclab.utils.errors import ConfigError

MEASURES = ("exact-agreement", "ratio-bounded", "ratio-grows")


def _values_text(values: tuple[float, ...]) -> str:
    return ", ".join(f"{float(v):g}" for v in values)


class ShiftClaim(ClaimKind):
    name = "shift"
    requires = (GAUSSIAN,)
    parameters: ClassVar[dict[str, ClaimParameter]] = {
        "shift": ClaimParameter(f"the shift: {', '.join(SHIFT_KINDS)}", choice(*SHIFT_KINDS),
                                required=True),
        "values": ClaimParameter("the shifted values, a list of 2 to 50 numbers",
                                 number_list(2, 50), required=True),
        "measure": ClaimParameter(f"the measure: {', '.join(MEASURES)}", choice(*MEASURES),
                                  required=True),
        **PROMPT_PARAMETERS,
    }
    statements: ClassVar[dict[str, str]] = {
        "exact-agreement": "the measured loss equals the exact population loss of the "
                           "model's read-out at every value",
        "ratio-bounded": "the ratio of the model's loss to the Bayes loss of the test law "
                         "stays bounded",
        "ratio-grows": "the ratio of the model's loss to the Bayes loss of the test law grows "
                       "without bound",
    }

    def validate_parameters(self, raw: dict[str, Any], where: str) -> dict[str, Any]:
        parameters = super().validate_parameters(raw, where)
        parameters["values"] = checked_values(
            parameters["shift"], parameters["values"], where,
            with_training_value=parameters["measure"] != "exact-agreement")
        return parameters

    def measurements(self, parameters: dict[str, Any]) -> tuple[RunMeasurement, ...]:
        return (ShiftMeasurement(parameters),)

    def unmet(self, spec: ClaimSpec, config: TrainConfig, task: TaskFamily) -> str | None:
        """A linear Gaussian family; exact-agreement: a read-out; the ratios: sigma > 0."""
        exact = spec.parameters["measure"] == "exact-agreement"
        return first_unmet((GAUSSIAN, READOUT if exact else NOISE), config, task)

    measurement_key = "shift"

    def parse_measurement(self, table: dict[str, Any], where: str) -> dict[str, Any]:
        return parse_shift_measurement(table, where)

    def report_measurement(self, measurement: MeasurementSpec, index: int,
                           context: ClaimContext) -> Measurement:
        return report_shift_measurement(measurement, index, context)

    def figure_key(self, spec: ClaimSpec) -> tuple[str, str] | None:
        return spec.group, "shift"

    def draw_figures(self, claims: list[ClaimSpec],
                     context: ClaimContext) -> list[FigureFile]:
        """The shift.png of each site's first seed, copied once per distinct evaluation."""
        spec, records, out_dir = context.sweep(f"the figure of group {claims[0].group!r}")
        group_sites = sites(spec, records, claims[0].group)
        figures: list[FigureFile] = []
        done: set[Path] = set()
        taken: set[str] = set()
        for claim in claims:
            for index, site in enumerate(group_sites):
                folder, data = measured_shift(claim, site.records[0], context)
                if folder in done:
                    continue
                done.add(folder)
                exact = data["rows"][0].get("exact_loss") is not None
                figures.append(shift_figure(
                    claim.section, claim.group, site, index, len(group_sites),
                    claim.parameters["shift"], folder, data["model"], data["prompts"], exact,
                    taken, out_dir))
        return figures

    def statement(self, spec: ClaimSpec) -> str:
        parameters, measure = spec.parameters, spec.parameters["measure"]
        default = self.statements[measure]
        if measure != "exact-agreement":
            default += (f": {'at most' if measure == 'ratio-bounded' else 'at least'} "
                        f"{spec.tolerance:g} times its value at the training law")
        return (f"{parameters['shift']} shift ({_values_text(parameters['values'])}): "
                + (spec.statement or default))

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        shifted = [(record, measured_shift(spec, record, context)[1])
                   for record in site.records]
        if spec.parameters["measure"] == "exact-agreement":
            return self._exact_agreement(spec, site, shifted)
        return self._ratio(spec, site, shifted)

    def _exact_agreement(self, spec: ClaimSpec, site: Site,
                         shifted: list[tuple[RunRecord, dict[str, Any]]]) -> Claim:
        worst = 0.0
        for record, data in shifted:
            for row in data["rows"]:
                if row.get("exact_loss") is None:
                    raise ConfigError(
                        f"the shift claim on group {spec.group!r}: run {record.point.run_id} "
                        f"(model {data.get('model')}) has no linear read-out, so no exact "
                        "loss; exact-agreement needs one (use ratio-bounded or ratio-grows)")
                gap = abs(float(row["model_loss"]) - float(row["exact_loss"]))
                stderr = float(row["model_loss_stderr"])
                worst = max(worst, gap / stderr if stderr > 0 else (0.0 if gap == 0
                                                                     else float("inf")))
        metric = (f"largest {seeds_phrase(site)} and values of |measured loss - exact loss| / "
                  f"standard error ({spec.parameters['prompts']} prompts per value); holds "
                  f"when value <= {spec.tolerance:g}")
        return self.claim(spec, site, worst <= spec.tolerance, metric, worst, 0.0,
                          f"{spec.tolerance:g} se")

    def _ratio(self, spec: ClaimSpec, site: Site,
               shifted: list[tuple[RunRecord, dict[str, Any]]]) -> Claim:
        kind, bounded = spec.parameters["shift"], spec.parameters["measure"] == "ratio-bounded"
        growths, theory = [], 0.0
        for index, (record, data) in enumerate(shifted):
            start = training_value(kind, record.point.config.to_json())
            rows = {float(row["value"]): row for row in data["rows"]}
            if start not in rows:
                raise ConfigError(f"the shift claim on group {spec.group!r}: values must include "
                                  f"the training value {start:g} of shift {kind}")
            growths.append(_growth(rows, start, "model_loss"))
            if index == 0:
                theory = _growth(rows, start, "gd_exact_loss")
        value = max(growths) if bounded else min(growths)
        holds = value <= spec.tolerance if bounded else value >= spec.tolerance
        sign = "<=" if bounded else ">="
        metric = (f"{'largest' if bounded else 'smallest'} {seeds_phrase(site)} of "
                  f"max over the values of (loss / Bayes loss of the test law) / (the same at "
                  f"the training value {training_value(kind, site.config):g}) "
                  f"({spec.parameters['prompts']} prompts per value; theory: the same for "
                  f"one-step GD with Gamma*, exact loss); holds when value {sign} "
                  f"{spec.tolerance:g}")
        return self.claim(spec, site, holds, metric, value, theory, f"{sign} {spec.tolerance:g}")


def _growth(rows: dict[float, dict[str, Any]], start: float, key: str) -> float:
    """max over the values of (row[key] / bayes_loss) / (the same at ``start``)."""
    if any(float(row["bayes_loss"]) <= 0 for row in rows.values()):
        raise ConfigError("the Bayes loss of a shifted law is 0 (sigma = 0?): the ratio "
                          "measures need a positive Bayes loss")
    ratios = {value: float(row[key]) / float(row["bayes_loss"]) for value, row in rows.items()}
    return max(ratios.values()) / ratios[start]

