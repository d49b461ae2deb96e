"""The files of ``iclab development`` in the run folder: development.json (everything),
development.csv (one row per checkpoint) and development.png (the distances from the exact
predictors and the test losses against the step on a log axis; the LLC beside them when
measured), all or none: every content is made first (a number that is not finite refuses
them all), then each file is written atomically, and a failed write removes those this call
created."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from iclab.studies.development.measure import PREDICTORS
from iclab.utils.errors import NotFiniteError
from iclab.utils.io import csv_text, write_files

JSON_NAME, CSV_NAME, PNG_NAME = "development.json", "development.csv", "development.png"
FILES = (JSON_NAME, CSV_NAME, PNG_NAME)
COLOURS = {"dmmse": "tab:red", "ridge": "tab:blue", "ls": "tab:green", "gd1": "tab:purple",
           "gdL": "tab:brown"}


def _axis_step(step: int) -> float:
    """Step 0 (the initial model) drawn at 0.5 on the log axis."""
    return step if step > 0 else 0.5


def png_bytes(data: dict[str, Any]) -> bytes:
    """development.png's bytes."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    rows = data["checkpoints"]
    with_llc = data.get("llc_settings") is not None
    figure = Figure(figsize=(11 if with_llc else 7.5, 4.5))
    panels = figure.subplots(1, 3 if with_llc else 2)
    steps = [_axis_step(row["step"]) for row in rows]
    distances, losses = panels[0], panels[1]
    for key in PREDICTORS:
        distances.errorbar(steps, [row[f"dist_{key}"] for row in rows],
                           yerr=[row[f"dist_{key}_stderr"] for row in rows], fmt="o-", ms=3,
                           lw=1, color=COLOURS[key], label=key)
    distances.set_title("mean squared distance from each predictor (pool prompts)",
                        fontsize=9)
    for name, colour in (("pool", "black"), ("fresh", "tab:orange")):
        losses.errorbar(steps, [row[f"test_loss_{name}"] for row in rows],
                        yerr=[row[f"test_loss_{name}_stderr"] for row in rows], fmt="o-",
                        ms=3, lw=1, color=colour, label=f"model, {name} tasks")
    for key, colour in (("dmmse", "tab:red"), ("ridge", "tab:blue")):
        for name, style in (("pool", "--"), ("fresh", ":")):
            losses.axhline(data["predictor_losses"][key][f"loss_{name}"], color=colour,
                           ls=style, lw=0.8, label=f"{key}, {name}")
    losses.set_title("test loss", fontsize=9)
    if with_llc:
        panels[2].errorbar(steps, [row["llc"] for row in rows],
                           yerr=[row["llc_stderr"] for row in rows], fmt="o-", ms=3,
                           color="black")
        panels[2].set_title("local learning coefficient (SGLD)", fontsize=9)
    for axes in panels:
        axes.set_xscale("log")
        axes.set_xlabel("training step (0 drawn at 0.5)")
    for axes in panels[:2]:
        axes.set_yscale("log")
        axes.legend(fontsize=7)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, dpi=110, format="png")
    return buffer.getvalue()



def write_development(run_dir: Path, data: dict[str, Any], figure: bool = True) -> None:
    """Write the three files in ``run_dir`` (without the figure unless ``figure``), all or
    none (module doc)."""
    try:
        text = json.dumps(data, indent=2, allow_nan=False) + "\n"
    except ValueError:
        raise NotFiniteError(f"{run_dir / JSON_NAME}: a number to be written is not finite "
                             f"(NaN or infinity), so nothing is written") from None
    contents: list[tuple[str, str | bytes]] = [(CSV_NAME, csv_text(data["checkpoints"]))]
    if figure:
        contents.append((PNG_NAME, png_bytes(data)))
    contents.append((JSON_NAME, text))
    write_files(run_dir, contents)
