"""The figures of a group's (or a section's) claims, each written to the sweep folder and
returned as ``FigureFile``s; the claim kinds call these from their ``draw_figures`` with
what only they know (the theory's line, the panels of their targets, the Bayes risk).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from iclab.experiments.figures import plots
from iclab.experiments.figures.depth import depth_figure
from iclab.experiments.figures.figure_file import FigureFile, indexed_name, section_file_name
from iclab.experiments.specs.results import RunRecord, Site
from iclab.utils.io import atomic_write

Panels = list[tuple[str, np.ndarray]]
"""Titled (d, d) matrices, one heatmap each."""


def only_axis(axes: tuple[str, ...]) -> str | None:
    """A group's axis when it sweeps exactly one, else None."""
    return axes[0] if len(axes) == 1 else None


def where_text(group: str, site: Site) -> str:
    return f"Group {group}{f' ({site.label})' if site.label else ''}"


def eta_figure(section: str, group: str, group_sites: list[Site], axis: str | None,
               reference: str, tolerance: float, out_dir: Path) -> FigureFile:
    """eta_hat against the group's numeric axis with the theory's curve (``reference``:
    "theorem1" or "optimum"), else per site against the optimum."""
    name = f"{group}_eta.png"
    numeric = axis is not None and all(
        isinstance(s.values[axis], int | float) for s in group_sites)
    title = f"{section}: learned step size ({group})"
    if numeric and axis is not None:
        plots.eta_against_axis(group_sites, axis, reference, tolerance, title, out_dir / name)
    else:
        plots.eta_by_site(group_sites, tolerance, title, out_dir / name)
    return FigureFile(section, name, (
        f"Group {group}: learned eta_hat (each seed, mean and range) against the theory; "
        f"right: relative error with the ±{100 * tolerance:g}% tolerance band."))


def gamma_figures(section: str, group: str, group_sites: list[Site],
                  panels_of: Callable[[RunRecord], Panels], out_dir: Path) -> list[FigureFile]:
    """Per site: heatmaps of its first seed's learned Gamma and the ``panels_of`` it."""
    figures = []
    for index, site in enumerate(group_sites):
        record = site.records[0]
        seed = record.point.config.run.seed
        panels = [(f"learned Gamma (seed {seed})", record.gamma), *panels_of(record)]
        name = indexed_name(f"{group}_gamma", index, len(group_sites)) + ".png"
        plots.gamma_heatmaps(panels, f"{group}: {site.label or 'Gamma'}", out_dir / name)
        figures.append(FigureFile(section, name, f"{where_text(group, site)}: "
                                  + ", ".join(p[0] for p in panels) + "."))
    return figures


def loss_figure(section: str, group: str, group_sites: list[Site], axis: str,
                risks: list[float] | None, out_dir: Path) -> FigureFile:
    """The test loss of the group's sites against ``axis``, with L* and the Bayes
    ``risks`` (one per site) where given."""
    name = f"{group}_loss.png"
    plots.loss_against_axis(group_sites, axis, risks, f"{section}: test loss ({group})",
                            out_dir / name)
    return FigureFile(section, name, f"Group {group}: test loss of the trained models "
                      f"(seeds) against L*" + (" and the Bayes-optimal risk" if risks else "")
                      + ".")


def copy_file(source: Path, target: Path) -> None:
    """Copy ``source`` to ``target`` atomically."""
    def write(tmp: Path) -> None:
        shutil.copyfile(source, tmp)

    atomic_write(target, write)


def depth_section_figure(section: str, groups: list[tuple[str, list[Site]]],
                         bayes: dict[str, float], out_dir: Path) -> FigureFile:
    """Test loss against L for a section's groups with the optimal L-step GD and the Bayes
    risk per panel (``bayes``), and the learned against the optimal per-layer steps."""
    name = section_file_name(section, "_depth.png")
    depth_figure(groups, bayes, f"{section}: test loss against the number of layers",
                 out_dir / name)
    return FigureFile(section, name, (
        f"Groups {', '.join(g for g, _ in groups)}: test loss (each seed, and the seed mean) "
        "against the number of layers L, with the optimal L-step GD loss (L* for a one-layer "
        "run) and the Bayes (ridge) risk; right: the learned per-layer steps of the sparse "
        "runs (looped: one step repeated) against the optimal L-step GD's, both sorted."))
