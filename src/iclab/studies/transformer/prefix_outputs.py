"""Writing the prefix curves: prefix.json, prefix.csv and prefix.png, each atomically.

prefix.json is the object ``prefix_curves.prefix_curves`` returns (one row per
k; an infinite closed form is null, with the note ``infinite_exact``). prefix.csv has one line
per k, the rows' keys as columns (empty for null). prefix.png draws error / d against k for
every predictor, a band of 2 standard errors around each measured curve, and the exact
curves dashed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from iclab.utils.io import atomic_write, atomic_write_json, atomic_write_text, csv_text

COLOURS = {"model": "black", "ols": "tab:orange", "ridge": "tab:green",
           "averaging": "tab:purple", "3-nn": "tab:brown", "bayes": "tab:red",
           "one-step-gd": "tab:cyan"}
LABELS = {"model": "model", "ols": "least squares (min norm)", "ridge": "ridge at the prior",
          "averaging": "averaging", "3-nn": "3 nearest neighbours", "bayes": "Bayes (posterior "
          "mean)", "one-step-gd": "one-step GD, Theorem 1's step"}



def _draw(path: Path, curves: dict[str, Any], title: str) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from iclab.utils.plain_ticks import plain_log_ticks

    rows = curves["rows"]
    figure = Figure(figsize=(7, 4.5))
    FigureCanvasAgg(figure)
    axes = figure.subplots()
    for name in curves["predictors"]:
        points = [(row["k"], row[name], row[f"{name}_stderr"]) for row in rows
                  if row.get(name) is not None]
        if not points:
            continue
        ks, means, errs = zip(*points, strict=True)
        colour = COLOURS.get(name)
        axes.plot(ks, means, "o-", ms=3, lw=1.4 if name == "model" else 0.9, color=colour,
                  label=LABELS.get(name, name))
        axes.fill_between(ks, [m - 2 * e for m, e in zip(means, errs, strict=True)],
                          [m + 2 * e for m, e in zip(means, errs, strict=True)],
                          color=colour, alpha=0.2, lw=0)
    for name in curves["exact"]:
        exact = [(row["k"], row[f"{name}_exact"]) for row in rows
                 if row.get(f"{name}_exact") is not None]
        if exact:
            ks, values = zip(*exact, strict=True)
            axes.plot(ks, values, "--", lw=1.6, color=COLOURS.get(name), alpha=0.8,
                      label=f"{LABELS.get(name, name)}, exact")
    finite = [row[name] for row in rows for name in curves["predictors"]
              if row.get(name) is not None and math.isfinite(row[name])]
    top = max(1.25, min(2.0, max(finite, default=1.0) * 1.05))
    axes.set_ylim(-0.02, top)
    axes.axvline(curves["d"], color="grey", lw=0.6, ls=":")
    axes.set_xlabel("k, in-context examples")
    axes.set_ylabel("squared error / d")
    axes.set_title(f"{title}: d = {curves['d']}, sigma = {curves['sigma']:g} "
                   f"(bands: 2 standard errors)", fontsize=10)
    axes.legend(fontsize=7)
    plain_log_ticks(figure)
    figure.tight_layout()
    atomic_write(path, lambda tmp: figure.savefig(tmp, format="png", dpi=110,
                                                  metadata={"Software": None}))


def write_prefix_outputs(paths: tuple[Path, Path, Path], curves: dict[str, Any],
                         title: str = "prefix curves") -> None:
    """Write prefix.json, prefix.csv and prefix.png at ``paths`` (in that order)."""
    json_path, csv_path, png_path = paths
    data = {**curves, "infinite_exact": "an exact value is null where the expectation is "
            "infinite (least squares at k = d - 1, d, d + 1 with sigma > 0)"}
    atomic_write_json(json_path, data)
    atomic_write_text(csv_path, csv_text(curves["rows"]))
    _draw(png_path, curves, title)
