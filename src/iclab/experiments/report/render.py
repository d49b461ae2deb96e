"""report.md and report.html of a sweep's claims and figures.

Sections follow the spec's claims (Theorem 1, Theorem 2, ...): each section's paragraph from
the spec, its figures, a table of its claims (with each claim's source) and the section's
measurements under "Measurements (not claims)"; then the runs that ended far from the
optimum, and the files beside the report. report.html embeds every figure (base64), so it
reads offline as a single file.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path

from iclab import __version__
from iclab.experiments.claims.kind import Claim
from iclab.experiments.figures.figure_file import FigureFile
from iclab.experiments.figures.measurement_table import Measurement
from iclab.experiments.specs.results import RunRecord
from iclab.experiments.specs.spec import Spec

FAR_FROM_OPTIMUM = 0.25
"""A run whose ||Gamma - Gamma*||_F / ||Gamma*||_F exceeds this is listed as not converged."""


def _number(value: float) -> str:
    return f"{value:.4g}"


def _claim_row(claim: Claim) -> list[str]:
    return [("holds" if claim.holds else "FAILS"), claim.claim, _number(claim.value),
            _number(claim.theory), claim.tolerance_text, claim.source, claim.metric]


HEADER = ["verdict", "claim", "learned", "theory", "tolerance", "source", "metric"]


def _sections(claims: list[Claim], measured: Sequence[Measurement] = ()) -> list[str]:
    return list(dict.fromkeys([*(c.section for c in claims), *(m.section for m in measured)]))


def _summary(claims: list[Claim], records: dict[str, RunRecord]) -> str:
    failed = sum(not c.holds for c in claims)
    verdict = (f"All {len(claims)} claims hold." if not failed
               else f"{failed} of {len(claims)} claims do not hold.")
    seconds = sum(float(r.result.get("wall_seconds", 0.0)) for r in records.values())
    return f"{verdict} {len(records)} trained models, {seconds:.0f} s of training in total."


def far_from_optimum(records: dict[str, RunRecord]) -> list[str]:
    """One line per run that ended far from the optimum (an optimisation failure)."""
    lines = []
    for run_id, record in records.items():
        error = float(record.result.get("gamma_rel_err", 0.0))
        if error > FAR_FROM_OPTIMUM:
            config = record.point.config
            lines.append(f"run {run_id} ({', '.join(record.point.groups)}; n={config.task.n}, "
                         f"sigma={config.task.sigma}, seed={config.run.seed}): "
                         f"||Gamma - Gamma*|| / ||Gamma*|| = {error:.3g}")
    return lines


DIAGNOSTIC = (f"Runs that ended far from the optimum (relative Gamma error above "
              f"{FAR_FROM_OPTIMUM:g}): the factorised LSA trained with Adam can stop at a "
              "spurious stationary point (a direction of Gamma missing, or the prediction "
              "carried by a nuisance term). That is a failure of the optimiser, not a "
              "statement about the optimum; a claim that includes such a run fails.")


def render_markdown(spec: Spec, claims: list[Claim], figures: list[FigureFile],
                    records: dict[str, RunRecord], measured: Sequence[Measurement] = (),
                    timing: str = "") -> str:
    lines = [f"# iclab report: {spec.name}", "", spec.description, "",
             f"**{_summary(claims, records)}**", ""]
    for section in _sections(claims, measured):
        lines += [f"## {section}", ""]
        if section in spec.sections:
            lines += [spec.sections[section], ""]
        for figure in (f for f in figures if f.section == section):
            lines += [f"![{figure.caption}]({figure.name})", "", f"*{figure.caption}*", ""]
        lines += ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in _claim_row(c)) + " |"
                  for c in claims if c.section == section]
        lines.append("")
        for measurement in (m for m in measured if m.section == section):
            lines += measurement.markdown()
    stuck = far_from_optimum(records)
    if stuck:
        lines += ["## Training diagnostics", "", DIAGNOSTIC, "", *(f"- {s}" for s in stuck), ""]
    lines += ["## Files", "", "results.csv (one row per run), timings.csv, claims.json, "
              f"runs/<config hash>/ (each run's folder). Spec: {spec.source}; "
              f"iclab {__version__}.", *([timing] if timing else []), ""]
    return "\n".join(lines)


STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;
color:#222}table{border-collapse:collapse;font-size:13px;margin:1em 0}td,th{border:1px solid
#ccc;padding:4px 6px;text-align:left;vertical-align:top}.holds{color:#176b1e;font-weight:bold}
.fails{color:#b00020;font-weight:bold}img{max-width:100%}figcaption{font-size:13px;color:#555}"""


def render_html(spec: Spec, claims: list[Claim], figures: list[FigureFile],
                records: dict[str, RunRecord], out_dir: Path,
                measured: Sequence[Measurement] = (), timing: str = "") -> str:
    esc = html.escape
    parts = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>",
             f"<title>iclab report: {esc(spec.name)}</title><style>{STYLE}</style></head><body>",
             f"<h1>iclab report: {esc(spec.name)}</h1>", f"<p>{esc(spec.description)}</p>",
             f"<p><strong>{esc(_summary(claims, records))}</strong></p>"]
    for section in _sections(claims, measured):
        parts.append(f"<h2>{esc(section)}</h2>")
        if section in spec.sections:
            parts.append(f"<p>{esc(spec.sections[section])}</p>")
        for figure in (f for f in figures if f.section == section):
            data = base64.b64encode((out_dir / figure.name).read_bytes()).decode("ascii")
            parts.append(f"<figure><img alt='{esc(figure.caption)}' "
                         f"src='data:image/png;base64,{data}'>"
                         f"<figcaption>{esc(figure.caption)}</figcaption></figure>")
        parts.append("<table><tr>" + "".join(f"<th>{h}</th>" for h in HEADER) + "</tr>")
        for claim in (c for c in claims if c.section == section):
            cells = _claim_row(claim)
            verdict = f"<td class='{'holds' if claim.holds else 'fails'}'>{cells[0]}</td>"
            parts.append("<tr>" + verdict + "".join(f"<td>{esc(c)}</td>" for c in cells[1:])
                         + "</tr>")
        parts.append("</table>")
        for measurement in (m for m in measured if m.section == section):
            data = base64.b64encode((out_dir / measurement.figure).read_bytes()).decode("ascii")
            parts += measurement.html(f"data:image/png;base64,{data}")
    stuck = far_from_optimum(records)
    if stuck:
        parts += ["<h2>Training diagnostics</h2>", f"<p>{esc(DIAGNOSTIC)}</p>", "<ul>",
                  *(f"<li>{esc(s)}</li>" for s in stuck), "</ul>"]
    parts.append(f"<p>Files beside this report: results.csv, timings.csv, claims.json, "
                 f"runs/. Spec: {esc(spec.source)}; iclab {__version__}.</p>"
                 + (f"<p>{esc(timing)}</p>" if timing else "") + "</body></html>")
    return "\n".join(parts) + "\n"
