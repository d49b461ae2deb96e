"""Measurements: what runs show where no theory makes a claim, reported as numbers, not verdicts.

A spec's ``[[measurements]]`` (``iclab.experiments.specs.measurement_spec``) each name a
section, the groups to show side by side and a shift with its values. The sweep evaluated each
run of each group under the shift exactly as for a ``shift`` claim (the same run-folder outputs,
shared); this module reads them (``iclab.experiments.claims.shift.measured_shift``), and the
report shows, under the heading "Measurements (not claims)", a table of each group's growth
g(v) = r(v) / r(v0) of the ratio r = loss / Bayes loss of the test law (seed mean ± its
standard error), beside the optimal LSA's exact growth, and a figure of the same.
Measurements never enter claims.json.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

from iclab.analysis.shift_growth import Growth, growth_figure, measured_growth
from iclab.experiments.claims.kind import ClaimContext
from iclab.experiments.claims.shift import measured_shift, training_value
from iclab.experiments.claims.shift_growth import site_exact_growth
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.measurement_spec import MeasurementSpec
from iclab.experiments.specs.results import RunRecord, sites
from iclab.experiments.specs.spec import Spec

HEADING = "Measurements (not claims)"


@dataclass(frozen=True)
class Measurement:
    """A measurement's table (header and rows of strings) and figure file."""

    section: str
    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    figure: str
    caption: str

    def markdown(self) -> list[str]:
        lines = [f"### {HEADING}: {self.title}", "", f"![{self.caption}]({self.figure})", "",
                 f"*{self.caption}*", "", "| " + " | ".join(self.header) + " |",
                 "|" + "---|" * len(self.header)]
        return lines + ["| " + " | ".join(row) + " |" for row in self.rows] + [""]

    def html(self, image: str) -> list[str]:
        esc = html.escape
        parts = [f"<h3>{esc(HEADING)}: {esc(self.title)}</h3>",
                 f"<figure><img alt='{esc(self.caption)}' src='{image}'>"
                 f"<figcaption>{esc(self.caption)}</figcaption></figure>",
                 "<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in self.header) + "</tr>"]
        parts += ["<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>"
                  for row in self.rows]
        return [*parts, "</table>"]


def _mean_growth(growths: list[Growth]) -> Growth:
    """The seed mean of g(v), its standard error that of a mean of independent seeds."""
    values = growths[0]
    count = len(growths)
    return {v: (sum(g[v][0] for g in growths) / count,
                sum(g[v][1] ** 2 for g in growths) ** 0.5 / count) for v in values}


def _label(record: RunRecord, group: str) -> str:
    return f"{record.point.config.model_name} ({group})"


def measure(spec: Spec, measurements: tuple[MeasurementSpec, ...],
            records: dict[str, RunRecord], context: ClaimContext,
            out_dir: Path) -> list[Measurement]:
    """Evaluate every measurement (its figure written to ``out_dir``) in spec order."""
    out = []
    for index, m in enumerate(measurements):
        measured: dict[str, Growth] = {}
        exact: Growth | None = None
        for group in m.groups:
            for site in sites(spec, records, group):
                claim = ClaimSpec(m.section, "shift", group, 0.0, {}, parameters=m.parameters)
                start = training_value(m.shift, site.config)
                growths = [measured_growth(measured_shift(claim, r, context)[1]["rows"], start)
                           for r in site.records]
                label = _label(site.records[0], group) + (f", {site.label}" if site.label
                                                          else "")
                measured[label] = _mean_growth(growths)
                if exact is None and site.records[0].point.config.task.family in (
                        "linear-gaussian", "anisotropic"):
                    exact = site_exact_growth(claim, site.records[0], context)
        name = f"measurement_{index + 1}_{m.shift}.png"
        title = f"{m.shift} shift, {', '.join(m.groups)}"
        growth_figure(m.shift, measured, exact, f"{m.section}: {title} (measured)",
                      out_dir / name)
        header = (m.shift, *measured, *(("optimal LSA (exact)",) if exact else ()))
        rows = []
        for value in sorted(float(v) for v in m.values):
            cells = [f"{value:g}"] + [f"{g[value][0]:.4g} ± {g[value][1]:.2g}"
                                      for g in measured.values()]
            if exact is not None:
                cells.append(f"{exact[value][0]:.4g}")
            rows.append(tuple(cells))
        caption = (f"Growth g = (loss / Bayes loss of the test law) / (the same at the training "
                   f"value) under the {m.shift} shift, seed mean ± standard error "
                   f"({m.prompts} prompts per value), beside the optimal one-layer LSA's exact "
                   "growth: measured, with no claim attached.")
        out.append(Measurement(m.section, title, header, tuple(rows), name, caption))
    return out
