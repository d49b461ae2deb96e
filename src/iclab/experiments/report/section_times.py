"""Where a report's time went: the runs' seconds per section, the driver's, and the report's
own phases.

A section's time is the sum of the ``wall_seconds`` and ``cpu_seconds`` (training and
evaluation, as result.json records them) of the runs in the groups its claims read; a run that
two sections share (the Context claims read Theorem 1's runs) counts in both for the report's
footer, and in the first for the budgets (``section_usage``, section_times.json), beside the
driver's seconds (wall: they run one after the other) of the section's claims, figures and
measurements. The runs ran in
parallel workers, so the sums are worker time, not the sweep's wall time; on a loaded machine
the CPU time is the steadier figure. The report's phases (checking the claims, drawing the
figures) are timed as they run (``PhaseTimer``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from iclab.experiments.specs.results import RunRecord
from iclab.experiments.specs.spec import Spec


def section_seconds(spec: Spec, records: dict[str, RunRecord]
                    ) -> dict[str, tuple[int, float, float]]:
    """Section -> (runs, summed wall seconds, summed CPU seconds) over the runs of the groups
    its claims read (the claim's ``group`` and any group named by its ``than``), in the
    claims' order."""
    groups: dict[str, set[str]] = {}
    for claim in spec.claims:
        than = claim.parameters.get("than")
        named = {claim.group} if than is None else {claim.group, str(than)}
        groups.setdefault(claim.section, set()).update(named)
    out: dict[str, tuple[int, float, float]] = {}
    for section, names in groups.items():
        runs = [r for r in records.values() if names.intersection(r.point.groups)]
        wall, cpu = (sum(float(r.result.get(key, 0.0)) for r in runs)
                     for key in ("wall_seconds", "cpu_seconds"))
        out[section] = (len(runs), wall, cpu)
    return out


def section_usage(spec: Spec, records: dict[str, RunRecord],
                  driver: dict[str, float]) -> list[dict[str, Any]]:
    """One row per section, in the claims' order: its runs (each counted in the first section
    that reads it), their CPU seconds and the longest one's, the driver's seconds (``driver``:
    its claims, figures and measurements), and the section's budget and whether every part
    kept to it (None where the spec declares none)."""
    counted: set[str] = set()
    rows = []
    for section in dict.fromkeys(claim.section for claim in spec.claims):
        names = {claim.group for claim in spec.claims if claim.section == section} | {
            str(claim.parameters["than"]) for claim in spec.claims
            if claim.section == section and claim.parameters.get("than") is not None}
        runs = [r for key, r in records.items()
                if key not in counted and names.intersection(r.point.groups)]
        counted.update(key for key, r in records.items() if r in runs)
        seconds = [float(r.result.get("cpu_seconds", 0.0)) for r in runs]
        runs_cpu = sum(seconds)
        budget = spec.budgets.get(section)
        used = driver.get(section, 0.0)
        rows.append({
            "section": section, "runs": len(runs), "runs_cpu_seconds": runs_cpu,
            "longest_run_cpu_seconds": max(seconds, default=0.0), "driver_seconds": used,
            "budget": None if budget is None else {
                "runs": budget.runs, "longest": budget.longest, "driver": budget.driver},
            "within_budget": None if budget is None else (
                runs_cpu <= budget.runs and max(seconds, default=0.0) <= budget.longest
                and used <= budget.driver)})
    return rows


@dataclass
class PhaseTimer:
    """Wall seconds of named phases, in the order they ran."""

    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started


def timing_text(spec: Spec, records: dict[str, RunRecord], phases: PhaseTimer) -> str:
    """One sentence for the report's footer, e.g. "Time of the runs per section (training and
    evaluation; wall / CPU seconds summed over the workers): Theorem 1 12 / 10 s (17 runs),
    Depth 30 / 28 s (8 runs); the report: claims 3 s, figures 4 s."."""
    sections = ", ".join(
        f"{name} {wall:.0f} / {cpu:.0f} s ({runs} run{'s' * (runs != 1)})"
        for name, (runs, wall, cpu) in section_seconds(spec, records).items())
    report = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in phases.seconds.items())
    return (f"Time of the runs per section (training and evaluation; wall / CPU seconds summed "
            f"over the workers): {sections}; the report: {report}.")
