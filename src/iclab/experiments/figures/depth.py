"""The depth figure of a report section: test loss against the number of layers L for each
group (sparse, full, looped, ...) beside the optimal L-step GD loss and the Bayes risk, one
panel per setting of the other axes (sigma, say), and the learned per-layer steps of the
sparse runs against the optimal L-step GD's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from iclab.experiments.figures.plots import BAYES, THEORY, save
from iclab.experiments.specs.results import Site, gd_loss

COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown")


def layers_of(site: Site) -> int:
    return site.records[0].layers


def panel_of(site: Site) -> str:
    """The site's values other than layers, in words ("" when it has none)."""
    return ", ".join(f"{k}={v}" for k, v in site.values.items() if k != "layers")


def depth_figure(groups: list[tuple[str, list[Site]]], bayes: dict[str, float], title: str,
                 path: Path) -> None:
    """``groups``: (name, sites) pairs; ``bayes``: the Bayes risk per panel (panel_of)."""
    panels = list(dict.fromkeys(panel_of(s) for _, group in groups for s in group))
    figure = Figure(figsize=(4.6 * (len(panels) + 1), 4.2))
    axes_list = np.atleast_1d(figure.subplots(1, len(panels) + 1))
    for axes, panel in zip(axes_list, panels, strict=False):
        optimal: dict[int, list[float]] = {}
        for index, (name, group) in enumerate(groups):
            line = sorted((s for s in group if panel_of(s) == panel), key=layers_of)
            if not line:
                continue
            x = [layers_of(s) for s in line]
            colour = COLOURS[index % len(COLOURS)]
            for xi, site in zip(x, line, strict=True):
                losses = [float(r.result["test_loss"]) for r in site.records]
                axes.scatter([xi] * len(losses), losses, s=12, color=colour, alpha=0.45)
                optimal.setdefault(xi, []).extend(gd_loss(r)[0] for r in site.records)
            axes.plot(x, [s.mean("test_loss") for s in line], "o-", color=colour,
                      label=f"{name} (seed mean)")
        steps = sorted(optimal)
        axes.plot(steps, [float(np.mean(optimal[L])) for L in steps], "s--", color=THEORY,
                  mfc="none", label="optimal L-step GD")
        if bayes.get(panel, 0.0) > 0:
            axes.axhline(bayes[panel], color=BAYES, ls=":", label="Bayes (ridge) risk")
        axes.set_yscale("log")
        axes.set_xticks(steps)
        axes.set_xlabel("layers L")
        axes.set_ylabel("test loss")
        axes.set_title(panel or "test loss against L", fontsize=10)
        axes.legend(fontsize=7)
    steps_axes = axes_list[-1]
    limits: list[float] = []
    for index, (name, group) in enumerate(groups):
        pairs = [(e, a) for s in group for r in s.records if "layer_steps" in r.result
                 for e, a in zip(sorted(r.result["gd_steps_etas"]),
                                 sorted(r.result["layer_steps"]), strict=True)]
        if pairs:
            optimal_steps, learned = zip(*pairs, strict=True)
            steps_axes.scatter(optimal_steps, learned, s=16, alpha=0.7,
                               color=COLOURS[index % len(COLOURS)], label=name)
            limits += [*optimal_steps, *learned]
    if limits:
        diagonal = np.array([min(limits) / 1.2, max(limits) * 1.2])
        steps_axes.plot(diagonal, diagonal, color=THEORY, lw=0.8, label="learned = optimal")
        steps_axes.set_xscale("log")
        steps_axes.set_yscale("log")
        steps_axes.legend(fontsize=7)
    steps_axes.set_xlabel("optimal L-step GD step eta_l (sorted)")
    steps_axes.set_ylabel("learned step a_l = tr(A_l)/(n d) (sorted)")
    steps_axes.set_title("per-layer steps (every seed, layer, L)", fontsize=10)
    figure.suptitle(title, fontsize=10)
    save(figure, path)
