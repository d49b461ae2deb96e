"""The figure of the ``lu-asymptotic`` claims: one panel per claim. Double descent: Result 1
(lam -> 0) and the asymptotic e_ICL, e_IDG at the claim's lam against tau, with the simulated
ones; the kappa transition: the asymptotic e_ICL and e_IDG against kappa with the simulated
ones; convergence: the gap |theory - simulation| against d (log-log, with standard errors and
a 1/d guide)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from iclab.experiments.figures.figure_file import FigureFile, section_file_name
from iclab.experiments.figures.plots import save
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.studies.asymptotic.errors import asymptotic_errors
from iclab.studies.asymptotic.formulas import ridgeless_e_icl


def _errors(axes: Any, x: list[float], sims: list[Any]) -> None:
    axes.errorbar(x, [s.e_icl for s in sims], [2 * s.e_icl_stderr for s in sims], fmt="o",
                  color="C0", label=f"simulated e_ICL (d={sims[0].d})")
    axes.errorbar(x, [s.e_idg for s in sims], [2 * s.e_idg_stderr for s in sims], fmt="s",
                  color="C1", mfc="none", label=f"simulated e_IDG (d={sims[0].d})")


def _theory(axes: Any, x: np.ndarray, points: list[tuple[float, ...]]) -> None:
    """The asymptotic e_ICL and e_IDG along ``points`` (lines; the claim's lam)."""
    errors = [asymptotic_errors(*point) for point in points]
    axes.plot(x, [e.e_icl for e in errors], color="C0", label="asymptotic e_ICL")
    axes.plot(x, [e.e_idg for e in errors], color="C1", ls="--", label="asymptotic e_IDG")


def _double_descent(axes: Any, spec: ClaimSpec, data: dict[str, Any]) -> None:
    p, grid = spec.parameters, data["grid"]
    fine = np.linspace(min(grid), max(grid), 300)
    fine = fine[np.abs(fine - 1.0) > 0.01]
    theory = np.asarray([ridgeless_e_icl(float(t), p["alpha"], p["kappa"], p["rho"])
                         for t in fine])
    for side in (fine < 1, fine > 1):
        axes.plot(fine[side], theory[side], color="k", lw=0.8,
                  label="Result 1, e_ICL (lam -> 0)" if side[0] else None)
    if p["lam"] > 0:
        _theory(axes, fine, [(float(t), p["alpha"], p["kappa"], p["rho"], p["lam"])
                             for t in fine])
    _errors(axes, grid, data["sims"])
    top = max(s.e_icl for s in data["sims"])
    axes.set_ylim(0, 1.5 * top)
    axes.set_xlabel("tau = n / d^2")
    axes.set_title(f"double descent (lam={p['lam']:g})")


def _kappa(axes: Any, spec: ClaimSpec, data: dict[str, Any]) -> None:
    p, grid = spec.parameters, data["grid"]
    fine = np.geomspace(min(grid), max(grid), 200)
    _theory(axes, fine, [(p["tau"], p["alpha"], float(k), p["rho"], p["lam"]) for k in fine])
    axes.axhline(asymptotic_errors(p["tau"], p["alpha"], math.inf, p["rho"], p["lam"]).e_icl,
                 color="k", ls=":", lw=0.8, label="kappa = inf (e_ICL = e_IDG)")
    _errors(axes, grid, data["sims"])
    axes.set_xscale("log")
    axes.set_xlabel("kappa = k / d")
    axes.set_title(f"task diversity (tau={p['tau']:g}, lam={p['lam']:g})")


def _convergence(axes: Any, data: dict[str, Any]) -> None:
    dims = data["dims"]
    for index, (point, gaps, _) in enumerate(data["rows"]):
        kappa = "inf" if math.isinf(point[2]) else f"{point[2]:g}"
        axes.errorbar(dims, [max(g, 1e-4) for g, _ in gaps], [se for _, se in gaps],
                      fmt="o-", color=f"C{index}", capsize=3,
                      label=f"tau={point[0]:g}, kappa={kappa}, lam={point[4]:g}")
    first = max(g for g, _ in data["rows"][0][1][:1])
    axes.plot(dims, [first * dims[0] / d for d in dims], color="grey", ls="--", label="1/d")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xticks(dims, [str(d) for d in dims])
    axes.set_xlabel("d")
    axes.set_ylabel("|asymptotic - simulated|")
    axes.set_title("gap to the asymptotic errors")


def draw(panels: list[tuple[str, ClaimSpec, dict[str, Any]]], section: str,
         out_dir: Path) -> list[FigureFile]:
    """One figure of len(panels) panels into ``out_dir``; its FigureFile."""
    figure = Figure(figsize=(5.2 * len(panels), 4.2))
    for index, (measure, spec, data) in enumerate(panels):
        axes = figure.add_subplot(1, len(panels), index + 1)
        if measure == "double-descent":
            _double_descent(axes, spec, data)
        elif measure == "kappa-transition":
            _kappa(axes, spec, data)
        else:
            _convergence(axes, data)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=7)
    name = section_file_name(section, "_asymptotic.png")
    save(figure, out_dir / name)
    return [FigureFile(section, name, "Lu et al.'s asymptotic errors of ridge-fitted linear "
                                      "attention (lines) and the finite-d simulation (points, "
                                      "2 standard errors); the gaps to the theory as d grows.")]
