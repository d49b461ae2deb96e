"""probe.json, probe.csv and probe.png of ``iclab probe``, each written atomically, after
everything is computed (an error writes none of them).

probe.png: held-out R^2 against layer, one line per target (the trained model at the query
position, solid, with bands of 2 standard errors; the random-initialisation control dotted),
one panel per kind of hook point (``resid``, ``attn``, ``state``, ...).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from iclab.utils.io import atomic_write, atomic_write_json, atomic_write_text, csv_text

FILES = ("probe.json", "probe.csv", "probe.png")


def _figure_bytes(data: dict[str, Any]) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = [row for row in data["rows"] if row["position"] == "query"]
    kinds = list(dict.fromkeys(row["kind"] for row in rows))
    figure = Figure(figsize=(4.2 * max(1, len(kinds)), 3.8))
    FigureCanvasAgg(figure)
    axes_list = figure.subplots(1, max(1, len(kinds)), squeeze=False)[0]
    colours = {name: f"C{i % 10}" for i, name in enumerate(data["targets"])}
    for axes, kind in zip(axes_list, kinds, strict=False):
        for target, colour in colours.items():
            for control, style in (("trained", "o-"), ("init", "x:")):
                points = sorted((row["layer"], row["r2"], row["r2_stderr"]) for row in rows
                                if row["kind"] == kind and row["target"] == target
                                and row["control"] == control)
                if not points:
                    continue
                at, r2, se = zip(*points, strict=True)
                axes.plot(at, r2, style, ms=3, color=colour, lw=1.2,
                          label=target if control == "trained" else None)
                if control == "trained":
                    axes.fill_between(at, [a - 2 * b for a, b in zip(r2, se, strict=True)],
                                      [a + 2 * b for a, b in zip(r2, se, strict=True)],
                                      color=colour, alpha=0.2, lw=0)
        axes.set_ylim(-0.1, 1.05)
        layers = sorted({row["layer"] for row in rows if row["kind"] == kind})
        axes.set_xticks(layers)
        axes.set_xlim(layers[0] - 0.5, layers[-1] + 0.5)
        axes.set_xlabel("layer")
        axes.set_ylabel("held-out R^2")
        axes.set_title(f"{kind} at the query", fontsize=9)
    axes_list[0].legend(fontsize=7)
    figure.suptitle(f"probes of {data['model']} on {data['family']} (d = {data['d']}, n = "
                    f"{data['n']}); crosses, dotted: random init", fontsize=9)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return buffer.getvalue()


def write_probe_outputs(out_dir: Path, data: dict[str, Any], figure: bool = True
                        ) -> list[Path]:
    """Write probe.json, probe.csv and (``figure``) probe.png into ``out_dir``; their
    paths."""
    picture = _figure_bytes(data) if figure else b""
    paths = [out_dir / name for name in FILES[: 3 if figure else 2]]
    atomic_write_json(paths[0], data)
    atomic_write_text(paths[1], csv_text(data["rows"]))
    if not figure:
        return paths

    def write_picture(tmp: Path) -> None:
        tmp.write_bytes(picture)

    atomic_write(paths[2], write_picture)
    return paths
