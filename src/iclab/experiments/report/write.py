"""The report of a finished sweep: claims.json, the figures (PNG), report.md and report.html.

Each claim kind draws its own figures (``ClaimKind.figure_key`` and ``draw_figures``): the
claims of a spec with the same key share one figure, drawn by the first one's kind, in claim
order; a figure that shows another's (a section's depth figure shows its groups' test
losses) leaves that one out (``figure_covers``). For the built-in kinds: eta_hat against sigma
or n (or per family), heatmaps of the learned Gamma against its target, the test loss
against n with L* and the Bayes risk, one figure per section for the depth kinds, and the
shift.png of each site's first seed. Checking the claims and drawing the figures read the
run folders only: the sweep made every measurement they need.
"""

from __future__ import annotations

import time
from pathlib import Path

from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind
from iclab.experiments.claims.registry import ClaimRegistry, evaluate_claims
from iclab.experiments.figures.figure_file import FigureFile
from iclab.experiments.report.render import render_html, render_markdown
from iclab.experiments.report.section_times import PhaseTimer, section_usage, timing_text
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.results import RunRecord
from iclab.experiments.specs.spec import Spec
from iclab.utils.io import atomic_write_json, atomic_write_text


def make_figures(context: ClaimContext, registry: ClaimRegistry,
                 seconds: dict[str, float] | None = None) -> list[FigureFile]:
    """Draw every figure the spec's claims call for (each kind draws its own); return them in
    claim order. ``context`` holds the spec, the records and the sweep folder; ``seconds``:
    the seconds (wall) of each figure are added to it, by the section of its first claim."""
    spec, _, _ = context.sweep("the report's figures")
    by_key: dict[tuple[str, str], tuple[ClaimKind, list[ClaimSpec]]] = {}
    for claim in spec.claims:
        kind = registry.get(claim.kind)
        key = kind.figure_key(claim)
        if key is not None:
            by_key.setdefault(key, (kind, []))[1].append(claim)
    covered = {key for kind, claims in by_key.values() for key in kind.figure_covers(claims)}
    figures: list[FigureFile] = []
    for key, (kind, claims) in by_key.items():
        if key not in covered:
            started = time.perf_counter()
            figures += kind.draw_figures(claims, context)
            if seconds is not None:
                section = claims[0].section
                seconds[section] = seconds.get(section, 0.0) + time.perf_counter() - started
    return figures


def write_report(spec: Spec, records: dict[str, RunRecord], out_dir: Path,
                 registry: ClaimRegistry, driver_seconds: dict[str, float] | None = None
                 ) -> list[Claim]:
    """Check the claims by the kinds of ``registry`` and write claims.json, the figures,
    report.md, report.html and section_times.json (each section's seconds beside its
    budget; ``driver_seconds``: what the sweep's measurements took, by section) into the sweep
    folder ``out_dir``."""
    out_dir = Path(out_dir)
    context = ClaimContext(out_dir=out_dir, spec=spec, records=records, kinds=registry)
    timer = PhaseTimer()
    driver = dict(driver_seconds or {})
    with timer.phase("claims"):
        claims = evaluate_claims(spec, records, registry, context.cache, out_dir=out_dir,
                                 seconds=driver)
    with timer.phase("figures"):
        figures = make_figures(context, registry, driver)
    with timer.phase("measurements"):
        measured = []
        for index, m in enumerate(spec.measurements):
            started = time.perf_counter()
            measured.append(registry.get(m.kind).report_measurement(m, index, context))
            driver[m.section] = driver.get(m.section, 0.0) + time.perf_counter() - started
    timing = timing_text(spec, records, timer)
    atomic_write_json(out_dir / "section_times.json",
                      {"sections": section_usage(spec, records, driver),
                       "report_phases_seconds": timer.seconds})
    atomic_write_json(out_dir / "claims.json", [c.to_json() for c in claims])
    atomic_write_text(out_dir / "report.md",
                      render_markdown(spec, claims, figures, records, measured, timing))
    atomic_write_text(out_dir / "report.html",
                      render_html(spec, claims, figures, records, out_dir, measured, timing))
    return claims
