"""The growth of the ratio loss / Bayes loss under a shift: measured, exact, and drawn.

With r(v) = (a model's loss) / (the Bayes loss of the test law at value v), the growth of a
shift is g(v) = r(v) / r(v0), v0 the training value (docs/theory.md section 13).

- ``measured_growth``: g(v) from the rows of a shift evaluation (``iclab.studies.shift.measure``:
  ``model_loss``, ``bayes_loss`` and their standard errors), with a standard error by the delta
  method that treats the four losses as independent. The rows are paired (every predictor, and
  every value, on prompts from one stream), and their errors are positively correlated, so this
  over-states the standard error: a test against it is conservative.
- ``exact_growth``: g(v) of the training law's optimal LSA, its exact loss over the Bayes risk
  of each test law (``iclab.studies.shift.optimum``, the rows of ``iclab theory --shift``),
  the Bayes risks drawn to a tenth of the measured growths' relative standard error
  (``exact_precision``).
- ``growth_over_n``: the exact growth from c = 1 to c = C of w-scale as a function of the
  training n (Zhang, Frei and Bartlett's robustness, section 13.3).
- ``growth_figure``, ``growth_over_n_figure``: the curves as PNG files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from iclab.studies.shift.optimum import BayesCache, shifted_optimum_rows
from iclab.studies.shift.outputs import AXIS_LABEL
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.errors import ConfigError
from iclab.utils.io import atomic_write
from iclab.utils.plain_ticks import plain_log_ticks

EXACT_STDERR_SHARE = 0.1
"""The exact growth's Bayes risks are drawn to a relative standard error of this share of the
smallest relative standard error of the measured growths it is compared with
(``exact_precision``): its own standard error (at most sqrt(2) x that, from two values) then
widens the combined one by 1 % at most."""
FIGURE_BAYES_STDERR = 0.002
"""The relative standard error of the Bayes risks of a curve drawn without a measurement
beside it (the growth against n): 0.2 %, finer than a figure shows."""
Growth = dict[float, tuple[float, float]]
"""value -> (growth, its standard error)."""


def _positive(value: Any, what: str) -> float:
    number = float(value)
    if not number > 0:
        raise ConfigError(f"the {what} is {number:g}: the ratio to the Bayes loss needs a "
                          "positive Bayes loss (sigma = 0?)")
    return number


def measured_growth(rows: Sequence[dict[str, Any]], start: float,
                    key: str = "model") -> Growth:
    """g(v) and its standard error for every row of a shift evaluation (rows need the value
    ``start``); ``key``: the predictor ("model", "gd", ...)."""
    by_value = {float(row["value"]): row for row in rows}
    if start not in by_value:
        raise ConfigError(f"the shifted values must include the training value {start:g}")

    def ratio(row: dict[str, Any]) -> tuple[float, float]:
        loss = _positive(row[f"{key}_loss"], f"{key} loss")
        bayes = _positive(row["bayes_loss"], "Bayes loss of the test law")
        relative = math.hypot(float(row[f"{key}_loss_stderr"]) / loss,
                              float(row["bayes_loss_stderr"]) / bayes)
        return loss / bayes, relative

    r0, e0 = ratio(by_value[start])
    out: Growth = {}
    for value, row in by_value.items():
        r, e = ratio(row)
        relative = 0.0 if value == start else math.hypot(e, e0)
        out[value] = (r / r0, r / r0 * relative)
    return out


def exact_precision(measured: Sequence[Growth], start: float) -> float:
    """The relative standard error to draw the exact growth's Bayes risks to, from the
    measured growths it is compared with: ``EXACT_STDERR_SHARE`` x their smallest relative
    standard error away from the training value ``start``."""
    relative = [se / abs(g) for growth in measured for value, (g, se) in growth.items()
                if value != start and g != 0 and se > 0]
    if not relative:
        raise ConfigError("the measured growths have no standard error away from the "
                          f"training value {start:g}: nothing to size the exact curve by")
    return EXACT_STDERR_SHARE * min(relative)


def exact_growth(task: LinearGaussian, kind: str, values: Sequence[float], start: float,
                 relative: float, seed: int = 0, cache: BayesCache | None = None) -> Growth:
    """g(v) of the optimal one-layer LSA of ``task``'s law (exact loss, Monte Carlo Bayes risk on
    common draws, each drawn to the ``relative`` standard error, ``exact_precision``; the
    standard error combines the two values' Bayes standard errors); ``cache``: Bayes risks
    computed before, reused (``shifted_optimum_rows``)."""
    points = sorted({float(v) for v in values} | {float(start)})
    rows = shifted_optimum_rows(task, kind, points, seed=seed, cache=cache,
                                bayes_stderr=relative)
    as_dicts = [{"value": row.value, "model_loss": row.lsa_loss, "model_loss_stderr": 0.0,
                 "bayes_loss": row.bayes_loss, "bayes_loss_stderr": row.bayes_loss_stderr}
                for row in rows]
    growth = measured_growth(as_dicts, float(start))
    return {float(v): growth[float(v)] for v in values}


def growth_over_n(task: LinearGaussian, ns: Sequence[int], scale: float,
                  cache: BayesCache | None = None) -> list[float]:
    """The exact growth g(scale) of w-scale for the optimal LSA trained at each n (d, sigma and
    the covariances of ``task``; ``cache`` as for ``exact_growth``)."""
    return [exact_growth(replace(task, n=int(n)), "w-scale", [scale], 1.0, FIGURE_BAYES_STDERR,
                         cache=cache)[scale][0] for n in ns]


def _save(figure: Figure, path: Path) -> None:
    FigureCanvasAgg(figure)
    plain_log_ticks(figure)
    figure.tight_layout()
    atomic_write(path, lambda tmp: figure.savefig(tmp, format="png", dpi=110,
                                                  metadata={"Software": None}))


def growth_figure(kind: str, measured: dict[str, Growth], exact: Growth | None, title: str,
                  path: Path) -> None:
    """g(v) of each labelled model (points, bars 2 se) and of the optimal LSA (a line)."""
    figure = Figure(figsize=(6.4, 4.2))
    axes = figure.add_subplot(1, 1, 1)
    for label, growth in measured.items():
        values = sorted(growth)
        axes.errorbar(values, [growth[v][0] for v in values],
                      yerr=[2 * growth[v][1] for v in values], fmt="o-", capsize=3,
                      label=label)
    if exact is not None:
        values = sorted(exact)
        axes.plot(values, [exact[v][0] for v in values], "k--", label="optimal LSA (exact)")
    axes.set_yscale("log")
    if kind != "w-mean" and min(v for g in measured.values() for v in g) > 0:
        axes.set_xscale("log")
    axes.set_xlabel(AXIS_LABEL.get(kind, kind))
    axes.set_ylabel("ratio to the Bayes loss / its value at training")
    axes.set_title(title, fontsize=10)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)
    _save(figure, path)


def growth_over_n_figure(ns: Sequence[int], exact: Sequence[float],
                         trained: dict[int, list[float]], scale: float, path: Path) -> None:
    """The exact growth of w-scale from 1 to ``scale`` against n, the trained runs' beside it."""
    figure = Figure(figsize=(6.4, 4.2))
    axes = figure.add_subplot(1, 1, 1)
    axes.plot(list(ns), list(exact), "k-", marker=".", label="optimal LSA (exact)")
    for n, growths in trained.items():
        axes.scatter([n] * len(growths), growths, color="tab:blue", zorder=3,
                     label=f"trained LSA, n = {n} (each seed)")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("n (context examples, training = test)")
    axes.set_ylabel(f"(ratio at w-scale {scale:g}) / (ratio at 1)")
    axes.set_title(f"Growth of loss / Bayes loss from w-scale 1 to {scale:g}: it falls as n "
                   "grows", fontsize=10)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)
    _save(figure, path)
