"""The files of ``iclab dynamics``: dynamics.json (everything), dynamics.csv (the logged
times with both curves) and dynamics.png (both curves against t on a log axis, the rank-k
loss levels as lines), written all or none: every file's content is made first (a number
that is not finite refuses them all), then each is written atomically, and a failed write
removes the files this call created."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from iclab.utils.errors import NotFiniteError
from iclab.utils.io import csv_text, write_files

JSON_NAME, CSV_NAME, PNG_NAME = "dynamics.json", "dynamics.csv", "dynamics.png"
COLUMNS = ("time", "step", "flow_loss", "sgd_loss", "sgd_loss_stderr")


def dynamics_csv(data: dict[str, Any]) -> str:
    """One row per logged time; empty cells where there is no SGD curve."""
    sgd = data["sgd_loss"] or [None] * len(data["times"])
    stderr = data["sgd_loss_stderr"] or [None] * len(data["times"])
    rows = zip(data["times"], data["steps"], data["flow_loss"], sgd, stderr, strict=True)
    return csv_text([dict(zip(COLUMNS, row, strict=True)) for row in rows])


def _png(data: dict[str, Any]) -> bytes:
    """dynamics.png's bytes."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from iclab.utils.plain_ticks import plain_log_ticks

    figure = Figure(figsize=(7, 4.5))
    axes = figure.subplots()
    axes.plot(data["flow_grid"], data["flow_grid_loss"], color="black", lw=1.5,
              label="exact gradient flow")
    if data["sgd_loss"] is not None:
        stderr = [0.0 if s is None else s for s in data["sgd_loss_stderr"]]
        axes.errorbar(data["times"], data["sgd_loss"], yerr=stderr, fmt="o", ms=3,
                      color="tab:orange", label="SGD (mean ± se)")
    for k, level in enumerate(data["rank_k_losses"]):
        axes.axhline(level, color="tab:blue", ls="--", lw=0.7)
        axes.annotate(f"k={k}", (data["flow_grid"][0], level), fontsize=7,
                      color="tab:blue", va="bottom")
    for plateau in data["plateaus"]:
        axes.plot([plateau["start"], plateau["end"]], [plateau["loss"]] * 2, color="tab:red",
                  lw=3, alpha=0.5)
    if data.get("drop_time_analytic") is not None:
        axes.axvline(data["drop_time_analytic"], color="tab:green", ls=":",
                     label="analytic drop time")
    axes.set_xscale("log")
    axes.set_xlabel("t = lr x step")
    axes.set_ylabel("population loss")
    axes.legend(fontsize=8)
    plain_log_ticks(figure)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, dpi=120, format="png")
    return buffer.getvalue()



def write_dynamics(out_dir: Path, data: dict[str, Any]) -> None:
    """Create ``out_dir`` and write the three files, all or none (module doc)."""
    try:
        text = json.dumps(data, indent=2, allow_nan=False) + "\n"
    except ValueError:
        raise NotFiniteError(f"{out_dir / JSON_NAME}: a number to be written is not finite "
                             f"(NaN or infinity), so nothing is written") from None
    png = _png(data)
    contents: list[tuple[str, str | bytes]] = [(CSV_NAME, dynamics_csv(data)),
                                               (PNG_NAME, png), (JSON_NAME, text)]
    write_files(out_dir, contents)
