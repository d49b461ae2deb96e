"""``shift_run``: a finished run under shifted test laws (``iclab shift``).

Reads the run folder, evaluates the trained model and the baselines under each shifted law
(``iclab.studies.shift.measure``) beside the exact population loss of the model's read-out, and
writes shift.json, shift.csv and shift.png. Every input is checked before any work, and
nothing is written on a bad kind or value.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from iclab.models.base import Model
from iclab.models.readout import LinearReadout
from iclab.runs.folder import check_out_dir, load_trained_model, read_finished_run
from iclab.studies.garg.input_shifts import INPUT_SHIFT_KINDS
from iclab.studies.shift.laws import (
    ALL_SHIFT_KINDS,
    input_shifted_law,
    parse_values,
    shifted_law,
)
from iclab.studies.shift.measure import curve_values, evaluate_shift, write_shift_outputs
from iclab.studies.shift.population import shifted_population_loss
from iclab.utils.errors import ConfigError

DEFAULT_PROMPTS = 100_000
MAX_PROMPTS = 10_000_000


def _readout(model: Model, n: int) -> LinearReadout | None:
    """The model's complete linear read-out at prompt length n, or None."""
    if not model.has_readout:
        return None
    readout = model.readout(n)
    return readout if readout.complete else None


def _curves(model: Model, base: Any, gamma_star: np.ndarray, kind: str,
            values: list[float]) -> dict[str, tuple[Sequence[float], Sequence[float]]]:
    """Exact loss curves on a dense grid, the model's read-out taken at each grid point's n
    (none for Garg et al.'s input shifts, which have no exact loss)."""
    if kind in INPUT_SHIFT_KINDS:
        return {}
    grid = curve_values(kind, values)
    laws = [shifted_law(base, kind, value) for value in grid]
    curves: dict[str, tuple[Sequence[float], Sequence[float]]] = {}
    readouts = [_readout(model, law.n) for law in laws]
    if all(r is not None for r in readouts):
        curves["model"] = (grid, [shifted_population_loss(r.u, r.M, law)  # type: ignore[union-attr]
                                  for r, law in zip(readouts, laws, strict=True)])
    gd = LinearReadout.from_gamma(gamma_star)
    curves["gd"] = (grid, [shifted_population_loss(gd.u, gd.M, law) for law in laws])
    return curves


def shift_run(run_dir: str | Path, kind: str, values_text: str,
              prompts: int = DEFAULT_PROMPTS, out: str | Path | None = None,
              seed: int = 0) -> dict[str, Any]:
    """Evaluate the run in ``run_dir`` under the ``kind`` shift at each of ``values_text``
    ("0.5,1,2"); write the outputs in ``out`` (default RUN_DIR/shift-KIND); return shift.json's
    content."""
    values = parse_values(kind, values_text, ALL_SHIFT_KINDS)
    if isinstance(prompts, bool) or not isinstance(prompts, int) or not (
            100 <= prompts <= MAX_PROMPTS):
        raise ConfigError(f"--prompts must be an integer from 100 to {MAX_PROMPTS}, got "
                          f"{prompts!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= 2**62:
        raise ConfigError(f"--seed must be an integer from 0 to 2**62, got {seed!r}")
    config, result = read_finished_run(Path(run_dir))
    task = config.make_task()
    if not task.gaussian:
        raise ConfigError(f"{run_dir}: iclab shift needs a run on a linear Gaussian family "
                          f"(linear-gaussian, anisotropic), not {task.name!r}")
    for value in values:                   # every law checked before anything is written
        if kind in INPUT_SHIFT_KINDS:
            input_shifted_law(task, kind, value)  # type: ignore[arg-type]
        else:
            shifted_law(task, kind, value)  # type: ignore[arg-type]
    out_dir = check_out_dir(out if out is not None else Path(run_dir) / f"shift-{kind}")
    model = load_trained_model(Path(run_dir), config, result=result)
    gamma_star = np.asarray(result["gamma_star"], dtype=np.float64)
    rows = []
    for value in values:  # the read-out is taken at each value's prompt length
        readout = _readout(model, int(value) if kind == "n" else task.n)
        pair = None if readout is None else (readout.u, readout.M)
        rows += evaluate_shift(model, pair, task, gamma_star,  # type: ignore[arg-type]
                               kind, [value], prompts, seed)
    trained = _readout(model, task.n)
    extra = {"run": str(run_dir), "prompts": prompts, "seed": seed,
             "model": config.model_name, "family": config.task.family,
             "training": {"d": task.d, "n": task.n, "sigma": task.sigma}}
    write_shift_outputs(out_dir, kind, None if trained is None else trained.u,
                        None if trained is None else trained.M, rows,
                        curves=_curves(model, task, gamma_star, kind, values), extra=extra)
    return {"kind": kind, "u": None if trained is None else trained.u.tolist(),
            "M": None if trained is None else trained.M.tolist(), "rows": rows, **extra}
