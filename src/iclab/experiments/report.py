"""The report of a finished sweep: claims.json, the figures (PNG), report.md and report.html.

Sections follow the spec's claims (Theorem 1, Theorem 2, ...). Each group that carries a claim
gets the figure that shows it: eta_hat against sigma or n (or per family) for ``eta`` claims,
heatmaps of the learned Gamma against its target for ``gamma`` / ``not-multiple`` claims, test
loss against n with L* and the Bayes risk for ``test-loss`` / ``above-bayes`` claims, one
figure per section for the depth kinds (test loss against L, learned against optimal steps),
and for ``shift`` claims the shift.png of each site's first seed (every predictor's loss against the
shifted value, with the exact curves), copied from the run's shift folder.
report.html embeds every figure (base64), so it reads offline as a single file.
"""

from __future__ import annotations

import base64
import html
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iclab import __version__
from iclab.experiments import plots
from iclab.experiments.claim_kinds import AboveBayesClaim, gamma_target, multiple_reference
from iclab.experiments.claims import Claim, ClaimContext, ClaimRegistry, evaluate_claims
from iclab.experiments.depth_plots import depth_figure, panel_of
from iclab.experiments.results import RunRecord, sites
from iclab.experiments.section_times import PhaseTimer, timing_text
from iclab.experiments.shift_claims import evaluated_shift
from iclab.experiments.spec import ClaimSpec, Spec
from iclab.io import atomic_write, atomic_write_json, atomic_write_text

FAR_FROM_OPTIMUM = 0.25
"""A run whose ||Gamma - Gamma*||_F / ||Gamma*||_F exceeds this is listed as not converged."""
GAMMA_NAMES = {"optimum": "optimum Gamma*", "preconditioned": "eta* Sigma_x^-1"}
MULTIPLE_NAMES = {"identity": "I", "inverse-cov-x": "Sigma_x^-1"}


@dataclass(frozen=True)
class FigureFile:
    """A figure written to the sweep folder, with the section it belongs to."""

    section: str
    name: str
    caption: str


def _axis(spec: Spec, group: str) -> str | None:
    axes = spec.group(group).axes
    return axes[0] if len(axes) == 1 else None


def _gamma_figures(spec: Spec, group: str, claims: list[ClaimSpec],
                   records: dict[str, RunRecord], out_dir: Path) -> list[FigureFile]:
    figures = []
    group_sites = sites(spec, records, group)
    for index, site in enumerate(group_sites):
        record = site.records[0]
        seed = record.point.config.run.seed
        panels = [(f"learned Gamma (seed {seed})", record.gamma)]
        for claim in claims:
            if claim.kind == "gamma":
                target = gamma_target(record, claim.options["target"])
                panels += [(GAMMA_NAMES[claim.options["target"]], target),
                           ("difference learned - target", record.gamma - target)]
            elif claim.kind == "not-multiple":
                reference = multiple_reference(record, claim.options["of"])
                c = float(np.sum(record.gamma * reference) / np.sum(reference * reference))
                panels.append((f"nearest c {MULTIPLE_NAMES[claim.options['of']]}",
                               c * reference))
        name = f"{group}_gamma{'' if len(group_sites) == 1 else f'_{index}'}.png"
        title = f"{group}: {site.label or 'Gamma'}"
        plots.gamma_heatmaps(panels, title, out_dir / name)
        figures.append(FigureFile(claims[0].section, name,
                                  f"Group {group}{f' ({site.label})' if site.label else ''}: "
                                  + ", ".join(p[0] for p in panels) + "."))
    return figures


def _copy(source: Path, target: Path) -> None:
    def write(tmp: Path) -> None:
        shutil.copyfile(source, tmp)

    atomic_write(target, write)


def _shift_figures(spec: Spec, group: str, claims: list[ClaimSpec],
                   records: dict[str, RunRecord], context: ClaimContext,
                   out_dir: Path) -> list[FigureFile]:
    """The shift.png of each site's first seed, copied once per distinct shift evaluation."""
    figures: list[FigureFile] = []
    done: set[Path] = set()
    group_sites = sites(spec, records, group)
    for claim in claims:
        for index, site in enumerate(group_sites):
            record = site.records[0]
            folder, data = evaluated_shift(claim, record, context)
            if folder in done:
                continue
            done.add(folder)
            kind = claim.parameters["shift"]
            name = f"{group}_shift_{kind}{'' if len(group_sites) == 1 else f'_{index}'}"
            if any(f.name == f"{name}.png" for f in figures):  # same kind, other values
                name += f"_{folder.name.rsplit('-', 1)[-1]}"
            _copy(folder / "shift.png", out_dir / f"{name}.png")
            exact = " (line: exact)" if data["rows"][0].get("exact_loss") is not None else ""
            figures.append(FigureFile(claim.section, f"{name}.png", (
                f"Group {group}{f' ({site.label})' if site.label else ''}, seed "
                f"{record.point.config.run.seed}, {kind} shift: test loss of the trained "
                f"{data['model']} model{exact} beside OLS, ridge, one-step GD with Gamma* and "
                f"the Bayes predictor of the test law ({data['prompts']} prompts per value, "
                f"bars 2 se); runs/{record.point.run_id}/{folder.name}/.")))
    return figures


def depth_groups(claims: list[ClaimSpec]) -> list[str]:
    """The groups a section's depth claims name (``group`` and ``than``), in order."""
    names = [c.group for c in claims] + [c.parameters["than"] for c in claims
                                         if "than" in c.parameters]
    return list(dict.fromkeys(names))


def _depth_figure(spec: Spec, section: str, claims: list[ClaimSpec],
                  records: dict[str, RunRecord], context: ClaimContext,
                  out_dir: Path) -> FigureFile:
    """Test loss against L for the section's groups, with the optimal L-step GD, the Bayes
    risk of the groups' above-bayes claims, and the learned against the optimal steps."""
    names = depth_groups(claims)
    groups = [(name, sites(spec, records, name)) for name in names]
    bayes: dict[str, float] = {}
    for claim in spec.claims:
        if claim.kind == "above-bayes" and claim.group in names:
            for site in sites(spec, records, claim.group):
                bayes[panel_of(site)] = AboveBayesClaim().bayes(claim, site, context)[0]
    name = "".join(c if c.isalnum() else "_" for c in section.lower()) + "_depth.png"
    depth_figure(groups, bayes, f"{section}: test loss against the number of layers",
                 out_dir / name)
    return FigureFile(section, name, (
        f"Groups {', '.join(names)}: test loss (each seed, and the seed mean) against the "
        "number of layers L, with the optimal L-step GD loss (L* for a one-layer run) and the "
        "Bayes (ridge) risk; right: the learned per-layer steps of the sparse runs (looped: "
        "one step repeated) against "
        "the optimal L-step GD's, both sorted."))


def make_figures(spec: Spec, records: dict[str, RunRecord], context: ClaimContext,
                 out_dir: Path, registry: ClaimRegistry | None = None) -> list[FigureFile]:
    """Draw every figure the spec's claims call for (each kind declares its figure); return
    them in claim order."""
    kinds = registry or ClaimRegistry()
    by_group: dict[tuple[str, str], list[ClaimSpec]] = {}
    for claim in spec.claims:
        family = kinds.get(claim.kind).figure
        if family is not None:  # one depth figure per section, covering its groups
            key = claim.section if family == "depth" else claim.group
            by_group.setdefault((key, family), []).append(claim)
    in_depth = {name for (_, family), claims in by_group.items() if family == "depth"
                for name in depth_groups(claims)}
    figures: list[FigureFile] = []
    for (group, family), claims in by_group.items():
        if family == "depth":
            figures.append(_depth_figure(spec, group, claims, records, context, out_dir))
            continue
        if family == "loss" and group in in_depth:
            continue  # the depth figure shows these losses (and the Bayes risk)
        first, axis = claims[0], _axis(spec, group)
        group_sites = sites(spec, records, group)
        name = f"{group}_{family}.png"
        if family == "eta":
            numeric = axis is not None and all(
                isinstance(s.values[axis], int | float) for s in group_sites)
            title = f"{first.section}: learned step size ({group})"
            if numeric and axis is not None:
                plots.eta_against_axis(group_sites, axis, first.options["reference"],
                                       first.tolerance, title, out_dir / name)
            else:
                plots.eta_by_site(group_sites, first.tolerance, title, out_dir / name)
            caption = (f"Group {group}: learned eta_hat (each seed, mean and range) against "
                       f"the theory; right: relative error with the ±{100 * first.tolerance:g}% "
                       "tolerance band.")
            figures.append(FigureFile(first.section, name, caption))
        elif family == "gamma":
            figures += _gamma_figures(spec, group, claims, records, out_dir)
        elif family == "shift":
            figures += _shift_figures(spec, group, claims, records, context, out_dir)
        elif axis is not None:
            risks = None
            bayes_claim = next((c for c in claims if c.kind == "above-bayes"), None)
            if bayes_claim is not None:
                risks = [AboveBayesClaim().bayes(bayes_claim, s, context)[0]
                         for s in group_sites]
            plots.loss_against_axis(group_sites, axis, risks,
                                    f"{first.section}: test loss ({group})", out_dir / name)
            figures.append(FigureFile(first.section, name,
                                      f"Group {group}: test loss of the trained models "
                                      f"(seeds) against L*" + (" and the Bayes-optimal risk"
                                                                if risks else "") + "."))
    return figures


def _number(value: float) -> str:
    return f"{value:.4g}"


def _claim_row(claim: Claim) -> list[str]:
    return [("holds" if claim.holds else "FAILS"), claim.claim, _number(claim.value),
            _number(claim.theory), claim.tolerance_text, claim.metric]


HEADER = ["verdict", "claim", "learned", "theory", "tolerance", "metric"]


def _sections(claims: list[Claim]) -> list[str]:
    return list(dict.fromkeys(c.section for c in claims))


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
                    records: dict[str, RunRecord], timing: str = "") -> str:
    lines = [f"# iclab report: {spec.name}", "", spec.description, "",
             f"**{_summary(claims, records)}**", ""]
    for section in _sections(claims):
        lines += [f"## {section}", ""]
        if section in spec.sections:
            lines += [spec.sections[section], ""]
        for figure in (f for f in figures if f.section == section):
            lines += [f"![{figure.caption}]({figure.name})", "", f"*{figure.caption}*", ""]
        lines += ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in _claim_row(c)) + " |"
                  for c in claims if c.section == section]
        lines.append("")
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
                records: dict[str, RunRecord], out_dir: Path, timing: str = "") -> str:
    esc = html.escape
    parts = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>",
             f"<title>iclab report: {esc(spec.name)}</title><style>{STYLE}</style></head><body>",
             f"<h1>iclab report: {esc(spec.name)}</h1>", f"<p>{esc(spec.description)}</p>",
             f"<p><strong>{esc(_summary(claims, records))}</strong></p>"]
    for section in _sections(claims):
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
    stuck = far_from_optimum(records)
    if stuck:
        parts += ["<h2>Training diagnostics</h2>", f"<p>{esc(DIAGNOSTIC)}</p>", "<ul>",
                  *(f"<li>{esc(s)}</li>" for s in stuck), "</ul>"]
    parts.append(f"<p>Files beside this report: results.csv, timings.csv, claims.json, "
                 f"runs/. Spec: {esc(spec.source)}; iclab {__version__}.</p>"
                 + (f"<p>{esc(timing)}</p>" if timing else "") + "</body></html>")
    return "\n".join(parts) + "\n"


def write_report(spec: Spec, records: dict[str, RunRecord], out_dir: Path) -> list[Claim]:
    """Evaluate the claims and write claims.json, the figures, report.md and report.html."""
    out_dir = Path(out_dir)
    context, timer = ClaimContext(out_dir=out_dir), PhaseTimer()
    with timer.phase("claims"):
        claims = evaluate_claims(spec, records, context.cache, out_dir=out_dir)
    with timer.phase("figures"):
        figures = make_figures(spec, records, context, out_dir)
    timing = timing_text(spec, records, timer)
    atomic_write_json(out_dir / "claims.json", [c.to_json() for c in claims])
    atomic_write_text(out_dir / "report.md",
                      render_markdown(spec, claims, figures, records, timing))
    atomic_write_text(out_dir / "report.html",
                      render_html(spec, claims, figures, records, out_dir, timing))
    return claims
