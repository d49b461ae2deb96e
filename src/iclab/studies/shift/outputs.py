"""Writing a shift evaluation: shift.json, shift.csv and the figure shift.png, each atomically.

shift.json is one object: ``kind``, the read-out ``u`` ((d+1,) list or null) and ``M``
((d+1) x d nested lists or null) in the convention yhat = u^T (sum_i e_i e_i^T) M x_q, ``rows``
(one object per value, as ``iclab.studies.shift.measure.evaluate_shift`` returns them) and any extra
keys given. shift.csv has one line per row, the same keys as columns (empty for null).
shift.png draws each predictor's measured loss (error bars: 2 standard errors) against the
shifted value, the exact curves beside them (the model's read-out and one-step GD with Gamma*),
with log axes where the values span a wide range.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from iclab.utils.io import atomic_write, atomic_write_json, atomic_write_text, csv_text

STYLE = {  # predictor -> (label, colour)
    "model": ("model", "tab:blue"),
    "ols": ("OLS (min norm)", "tab:orange"),
    "ridge": ("ridge, training prior", "tab:green"),
    "gd": ("one-step GD, Gamma*", "tab:purple"),
    "bayes": ("Bayes, test law", "tab:red"),
}
AXIS_LABEL = {
    "n": "n (context examples at test time)",
    "sigma": "sigma (test noise)",
    "x-scale": "c: x_i, x_q ~ N(0, c^2 Sigma_x)",
    "query-scale": "c: x_q ~ N(0, c^2 Sigma_x)",
    "w-scale": "c: w ~ N(0, c^2 Sigma_w)",
    "w-mean": "m: w ~ N(m 1/sqrt(d), Sigma_w)",
    "skewed-covariance": "a: x ~ N(0, S), eigenvalues of S ~ i^-a",
    "orthant": "p: context folded into one orthant, query into the opposite",
    "orthant-random": "p: context folded into one orthant, query unchanged",
    "orthogonal-query": "p: share of the query's projection on the context removed",
}
Curves = dict[str, tuple[Sequence[float], Sequence[float]]]


def _as_list(array: Any) -> Any:
    return None if array is None else np.asarray(array, dtype=np.float64).tolist()



def _wide(values: Sequence[float]) -> bool:
    positive = [v for v in values if v is not None and np.isfinite(v)]
    return bool(positive) and min(positive) > 0 and max(positive) / min(positive) >= 4


def _exact_curves(rows: list[dict[str, Any]], curves: Curves | None) -> Curves:
    """The curves given, or else the rows' exact losses at the values themselves."""
    if curves is not None:
        return curves
    x = [float(row["value"]) for row in rows]
    found: Curves = {}
    for name, key in (("model", "exact_loss"), ("gd", "gd_exact_loss")):
        if all(row.get(key) is not None for row in rows):
            found[name] = (x, [float(row[key]) for row in rows])
    return found


def _draw(path: Path, kind: str, rows: list[dict[str, Any]], curves: Curves | None) -> None:
    """Measured points with 2-se error bars; a predictor with an exact curve gets that curve as
    its line, the others a thin line through their points."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import LogFormatter, NullFormatter

    from iclab.utils.plain_ticks import plain_log_ticks

    exact = _exact_curves(rows, curves)
    measured = {name: ([float(row[f"{name}_loss"]) for row in rows],
                       [2 * float(row[f"{name}_loss_stderr"]) for row in rows])
                for name in STYLE if f"{name}_loss" in rows[0]}
    everything = [v for y, _ in measured.values() for v in y]
    everything += [float(v) for _, losses in exact.values() for v in losses]
    log_y = all(np.isfinite(everything)) and _wide(everything) \
        and max(everything) / min(everything) >= 10

    figure = Figure(figsize=(7, 4.5))
    FigureCanvasAgg(figure)
    axes = figure.subplots()
    x = [float(row["value"]) for row in rows]
    for name, (y, err) in measured.items():
        label, colour = STYLE[name]
        low = [min(e, 0.999 * v) for e, v in zip(err, y, strict=True)] if log_y else err
        axes.errorbar(x, y, yerr=[low, err], fmt="o" if name in exact else "o-", ms=4, lw=0.8,
                      capsize=3, color=colour, label=f"{label}, measured")
    for name, (grid, losses) in exact.items():
        label, colour = STYLE.get(name, (name, "black"))
        axes.plot(grid, losses, "--" if name == "gd" else "-", color=colour, lw=1.6, alpha=0.7,
                  label=f"{label}, exact")
    if log_y:
        axes.set_yscale("log")
        axes.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.4)))
    if kind not in ("sigma", "w-mean") and _wide(x):
        axes.set_xscale("log")
        axes.xaxis.set_minor_formatter(NullFormatter())
    axes.set_xticks(x, labels=[f"{value:g}" for value in x])
    axes.set_xlabel(AXIS_LABEL.get(kind, kind))
    axes.set_ylabel("test loss E[(yhat - y_q)^2]")
    axes.set_title(f"shift: {kind} (error bars: 2 standard errors)")
    axes.legend(fontsize=7)
    plain_log_ticks(figure)
    figure.tight_layout()
    atomic_write(path, lambda tmp: figure.savefig(tmp, format="png", dpi=110,
                                                  metadata={"Software": None}))


def write_shift_outputs(
    out_dir: Path,
    kind: str,
    u: np.ndarray | None,
    M: np.ndarray | None,
    rows: list[dict[str, Any]],
    *,
    curves: Curves | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Write shift.json, shift.csv and shift.png into ``out_dir`` (created if needed).

    u: (d+1,) and M: (d+1, d), or None for a model without a linear read-out; rows as from
    ``evaluate_shift``; curves: exact curves {predictor: (values, losses)} as from
    ``shift_curves`` (None: the rows' exact losses are joined by lines); extra: more top-level
    keys for shift.json.
    """
    if not rows:
        raise ValueError("no rows to write")
    out_dir = Path(out_dir)
    data: dict[str, Any] = {"kind": kind, "u": _as_list(u), "M": _as_list(M), "rows": rows}
    data.update(extra or {})
    atomic_write_json(out_dir / "shift.json", data)
    atomic_write_text(out_dir / "shift.csv", csv_text(rows))
    _draw(out_dir / "shift.png", kind, rows, curves)
