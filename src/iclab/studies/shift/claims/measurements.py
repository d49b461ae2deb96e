"""Measurements: what runs show where no theory makes a claim, reported as numbers, not verdicts.

A spec's ``[[measurements]]`` (``iclab.experiments.specs.measurement_spec``) with a ``shift``
key are the ``shift`` kind's (``parse_shift_measurement``): each names a section, the groups to
show side by side and a shift with its values. The sweep evaluated each
run of each group under the shift exactly as for a ``shift`` claim (the same run-folder outputs,
shared); this module reads them (``iclab.studies.shift.claims.claim.measured_shift``), and the
report shows, under the heading "Measurements (not claims)", a table of each group's growth
g(v) = r(v) / r(v0) of the ratio r = loss / Bayes loss of the test law (seed mean ± its
standard error), beside the optimal LSA's exact growth, and a figure of the same.
Measurements never enter claims.json.
"""

from __future__ import annotations

from typing import Any

from iclab.experiments.claims.kind import ClaimContext
from iclab.experiments.figures.measurement_table import Measurement
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.measurement_spec import MeasurementSpec
from iclab.experiments.specs.results import RunRecord, sites
from iclab.studies.shift.claims.growth_claim import site_exact_growth
from iclab.studies.shift.claims.shift_folder import (
    DEFAULT_PROMPTS,
    RATIO_KINDS,
    measured_shift,
    training_value,
)
from iclab.studies.shift.growth import Growth, growth_figure, measured_growth
from iclab.studies.shift.laws import check_includes_training_value, check_value
from iclab.studies.shift.run import MAX_PROMPTS
from iclab.utils.errors import ConfigError

KEYS = ("shift", "values", "prompts", "seed")
"""A shift measurement's own keys, beside ``section`` and ``groups``."""


def _mean_growth(growths: list[Growth]) -> Growth:
    """The seed mean of g(v), its standard error that of a mean of independent seeds."""
    values = growths[0]
    count = len(growths)
    return {v: (sum(g[v][0] for g in growths) / count,
                sum(g[v][1] ** 2 for g in growths) ** 0.5 / count) for v in values}


def _label(record: RunRecord, group: str) -> str:
    return f"{record.point.config.model_name} ({group})"


def _integer(value: Any, low: int, high: int, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{key} must be an integer from {low} to {high}, got {value!r}")
    return value


def _values(value: Any, kind: str) -> tuple[float, ...]:
    if not isinstance(value, list) or not 2 <= len(value) <= 50 or any(
            isinstance(v, bool) or not isinstance(v, int | float) for v in value):
        raise ConfigError(f"values must be a list of 2 to 50 numbers, got {value!r}")
    checked = tuple(check_value(kind, v) for v in value)
    if len({float(v) for v in checked}) != len(checked):
        raise ConfigError(f"values must list distinct numbers, got {value!r}")
    return checked


def parse_shift_measurement(table: dict[str, Any], where: str) -> dict[str, Any]:
    """The checked ``shift``, ``values`` (with the training value: 1 for the scales, 0 for
    w-mean), ``prompts`` (per value, default 20,000) and ``seed`` (of the shifted prompts,
    default 0) of a ``[[measurements]]`` table; ConfigError starting with ``where``."""
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown}; allowed: "
                          f"{['section', 'groups', *KEYS]}")
    kind = table.get("shift")
    if kind not in RATIO_KINDS:
        raise ConfigError(f"{where}: shift must be one of {', '.join(RATIO_KINDS)}, got "
                          f"{kind!r}")
    try:
        values = _values(table.get("values"), kind)
        prompts = _integer(table.get("prompts", DEFAULT_PROMPTS), 100, MAX_PROMPTS, "prompts")
        seed = _integer(table.get("seed", 0), 0, 2**62, "seed")
        check_includes_training_value(kind, values)
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}") from None
    return {"shift": kind, "values": values, "prompts": prompts, "seed": seed}


def report_shift_measurement(m: MeasurementSpec, index: int,
                             context: ClaimContext) -> Measurement:
    """The growth table and figure of the ``index``-th measurement (a shift measurement),
    from the shift evaluations the sweep made in the run folders."""
    spec, records, out_dir = context.sweep("a shift measurement")
    shift, values, prompts = m.parameters["shift"], m.parameters["values"], \
        m.parameters["prompts"]
    measured: dict[str, Growth] = {}
    exact: Growth | None = None
    for group in m.groups:
        for site in sites(spec, records, group):
            claim = ClaimSpec(m.section, "shift", group, 0.0, {}, parameters=m.parameters)
            start = training_value(shift, site.config)
            growths = [measured_growth(measured_shift(claim, r, context)[1]["rows"], start)
                       for r in site.records]
            label = _label(site.records[0], group) + (f", {site.label}" if site.label
                                                      else "")
            measured[label] = _mean_growth(growths)
            if exact is None and site.records[0].point.config.task.family in (
                    "linear-gaussian", "anisotropic"):
                exact = site_exact_growth(claim, site.records[0], context, growths)
    name = f"measurement_{index + 1}_{shift}.png"
    title = f"{shift} shift, {', '.join(m.groups)}"
    growth_figure(shift, measured, exact, f"{m.section}: {title} (measured)",
                  out_dir / name)
    header = (shift, *measured, *(("optimal LSA (exact)",) if exact else ()))
    rows = []
    for value in sorted(float(v) for v in values):
        cells = [f"{value:g}"] + [f"{g[value][0]:.4g} ± {g[value][1]:.2g}"
                                  for g in measured.values()]
        if exact is not None:
            cells.append(f"{exact[value][0]:.4g}")
        rows.append(tuple(cells))
    caption = (f"Growth g = (loss / Bayes loss of the test law) / (the same at the training "
               f"value) under the {shift} shift, seed mean ± standard error "
               f"({prompts} prompts per value), beside the optimal one-layer LSA's exact "
               "growth: measured, with no claim attached.")
    return Measurement(m.section, title, header, tuple(rows), name, caption)
