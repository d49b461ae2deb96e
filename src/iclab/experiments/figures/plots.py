"""The report's figures, drawn from a sweep's sites and written as PNG files atomically.

Matplotlib is used through its object interface with the Agg canvas (no pyplot, no global
backend switch). Each function draws one figure and returns nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from iclab.experiments.specs.results import RunRecord, Site
from iclab.theory.gaussian import eta_star_continued, eta_star_isotropic
from iclab.utils.io import atomic_write
from iclab.utils.plain_ticks import plain_log_ticks

DPI = 110
LEARNED, THEORY, BAYES = "tab:blue", "black", "tab:red"


def _theorem1_eta(record: RunRecord) -> float:
    task = record.point.config.task
    return eta_star_isotropic(task.n, task.d, task.sigma)


def save(figure: Figure, path: Path) -> None:
    FigureCanvasAgg(figure)
    plain_log_ticks(figure)
    figure.tight_layout()
    atomic_write(path, lambda tmp: figure.savefig(tmp, format="png", dpi=DPI,
                                                  metadata={"Software": None}))


def _seed_points(axes: Axes, x: Sequence[float], per_site: list[list[float]], label: str) -> None:
    """Every seed as a small dot, the seed mean as a marker with the seed range as a bar."""
    for xi, values in zip(x, per_site, strict=True):
        axes.scatter([xi] * len(values), values, s=12, color=LEARNED, alpha=0.45, zorder=3)
    means = np.array([np.mean(v) for v in per_site])
    low = means - np.array([np.min(v) for v in per_site])
    high = np.array([np.max(v) for v in per_site]) - means
    axes.errorbar(x, means, yerr=[low, high], fmt="o", color=LEARNED, capsize=3, zorder=4,
                  label=label)


def _relative_panel(axes: Axes, x: Sequence[float], errors: list[list[float]], tolerance: float,
                    xlabel: str) -> None:
    axes.axhspan(-100 * tolerance, 100 * tolerance, color="tab:green", alpha=0.12,
                 label=f"tolerance ±{100 * tolerance:g}%")
    axes.axhline(0.0, color=THEORY, lw=0.8)
    _seed_points(axes, x, [[100 * e for e in errs] for errs in errors], "learned (seeds)")
    axes.set_xlabel(xlabel)
    axes.set_ylabel("eta_hat / theory - 1 (%)")
    axes.legend(fontsize=8)


def eta_against_axis(sites: list[Site], axis: str, reference: str, tolerance: float,
                     title: str, path: Path) -> None:
    """eta_hat against a numeric axis (sigma or n) with the theory curve, seeds and errors."""
    figure = Figure(figsize=(10, 4))
    main, rel = figure.subplots(1, 2)
    x = [float(site.values[axis]) for site in sites]
    learned = [[float(r.result["eta_hat"]) for r in site.records] for site in sites]
    if reference == "theorem1":
        config = sites[0].config
        grid = (np.geomspace(min(x), max(x), 200) if axis == "n"
                else np.linspace(min(x), max(x), 200))
        values = {"n": config["n"], "d": config["d"], "sigma": config["sigma"]}
        curve = [eta_star_continued(**{**values, axis: g}) for g in grid]
        main.plot(grid, curve, color=THEORY, label="theory 1/(n+d+1+sigma^2)")
        theory = [[_theorem1_eta(r) for r in site.records] for site in sites]
    else:
        theory = [[float(r.result["eta_star"]) for r in site.records] for site in sites]
        main.plot(x, [np.mean(t) for t in theory], "s--", color=THEORY, label="optimum eta*")
    _seed_points(main, x, learned, "learned eta_hat (seeds, mean, range)")
    if axis == "n":
        main.set_xscale("log")
        main.set_yscale("log")
    main.set_xlabel(axis)
    main.set_ylabel("step size")
    main.set_title(title, fontsize=10)
    main.legend(fontsize=8)
    errors = [[e / t - 1 for e, t in zip(ls, ts, strict=True)]
              for ls, ts in zip(learned, theory, strict=True)]
    _relative_panel(rel, x, errors, tolerance, axis)
    if axis == "n":
        rel.set_xscale("log")
    save(figure, path)


def eta_by_site(sites: list[Site], tolerance: float, title: str, path: Path) -> None:
    """eta_hat of each site (e.g. each family) against its optimum, with the Monte Carlo
    standard error of the optimum where it has one."""
    figure = Figure(figsize=(10, 4))
    main, rel = figure.subplots(1, 2)
    x = list(range(len(sites)))
    learned = [[float(r.result["eta_hat"]) for r in site.records] for site in sites]
    optimum = [site.mean("eta_star") for site in sites]
    stderr = [float(site.records[0].result.get("eta_star_stderr") or 0.0) for site in sites]
    main.errorbar([xi + 0.15 for xi in x], optimum, yerr=stderr, fmt="s", color=THEORY, ms=9,
                  mfc="none", capsize=5, label="optimum eta* (± Monte Carlo s.e.)")
    _seed_points(main, x, learned, "learned eta_hat (seeds, mean, range)")
    labels = [site.label.replace(", ", "\n") or "all" for site in sites]
    for axes in (main, rel):
        axes.set_xticks(x, labels, fontsize=8)
        axes.set_xlim(-0.6, len(sites) - 0.4)
    main.set_ylabel("step size")
    main.set_title(title, fontsize=10)
    main.legend(fontsize=8)
    errors = [[e / o - 1 for e in ls] for ls, o in zip(learned, optimum, strict=True)]
    _relative_panel(rel, x, errors, tolerance, "")
    save(figure, path)


def gamma_heatmaps(panels: list[tuple[str, np.ndarray]], title: str, path: Path) -> None:
    """Side-by-side heatmaps of (d, d) matrices with their entries; panels whose title starts
    with "difference" get their own colour scale, the others share one."""
    figure = Figure(figsize=(3.2 * len(panels), 3.4))
    axes_list = figure.subplots(1, len(panels))
    shared = max(float(np.abs(m).max()) for name, m in panels if not name.startswith("diff"))
    for axes, (name, matrix) in zip(np.atleast_1d(axes_list), panels, strict=True):
        scale = float(np.abs(matrix).max()) if name.startswith("diff") else shared
        image = axes.imshow(matrix, cmap="RdBu_r", vmin=-scale, vmax=scale)
        d = matrix.shape[0]
        if d <= 8:
            for i in range(d):
                for j in range(d):
                    axes.text(j, i, f"{matrix[i, j]:.3f}", ha="center", va="center", fontsize=6)
        axes.set_title(name, fontsize=9)
        axes.set_xticks([])
        axes.set_yticks([])
        figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04)
    figure.suptitle(title, fontsize=10)
    save(figure, path)


def loss_against_axis(sites: list[Site], axis: str, bayes: list[float] | None, title: str,
                      path: Path) -> None:
    """Test loss of the trained models against L* (and the Bayes risk) along an axis."""
    figure = Figure(figsize=(6, 4.2))
    axes = figure.subplots()
    x = [float(site.values[axis]) for site in sites]
    axes.plot(x, [site.mean("loss_star") for site in sites], "s-", color=THEORY, mfc="none",
              label="optimal LSA loss L*")
    if bayes is not None:
        axes.plot(x, bayes, "^-", color=BAYES, label="Bayes-optimal (ridge) loss")
    _seed_points(axes, x, [[float(r.result["test_loss"]) for r in s.records] for s in sites],
                 "trained LSA test loss (seeds)")
    if axis == "n":
        axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel(axis)
    axes.set_ylabel("mean squared error")
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=8)
    save(figure, path)
