"""A trained model under shifted test laws, beside the baselines and the exact theory.

For each value of one shift (``iclab.studies.shift.laws``: n, sigma, x-scale, query-scale, w-scale,
w-mean, skewed-covariance; and Garg et al.'s orthant, orthant-random and orthogonal-query,
whose laws are not Gaussian: no exact losses) applied to the training law, ``evaluate_shift``
measures on the same fresh prompts (paired: every predictor sees the same prompts) the mean
squared error and its standard error of

- ``model``: the predictor given (any (X, y, x_q) -> yhat, called on float64 tensors);
- ``ols``: minimum-norm least squares;
- ``ridge``: ridge at the TRAINING prior, the training law's posterior mean (penalty
  sigma^2 Sigma_w^{-1} of the training law);
- ``gd``: one step of preconditioned GD with the training optimum's Gamma*, x_q^T Gamma* X^T y;
- ``bayes``: the Bayes-optimal predictor of the TEST law (posterior mean with the test prior's
  mean and covariance and the test noise; the sigma = 0 limit at sigma = 0),

and, where the model has a linear read-out (u, M) (yhat = u^T Z M x_q, Z = sum_i e_i e_i^T over
the n context examples), the exact population loss of (u, M) under the test law
(``iclab.studies.shift.population``); ``gd_exact_loss`` is the same for Gamma*.

Every value's prompts come from the same seeded stream, so the values share their random
numbers (common random numbers: smoother curves, each point's standard error still valid).
The work runs with one intra-op thread: torch's batched pseudo-inverse of many tiny matrices
(OLS) is about 30 times slower with two threads on a busy 2-core machine.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from iclab.algorithms.baselines import BayesPosteriorMean, LeastSquares
from iclab.algorithms.gd import PreconditionedGD
from iclab.algorithms.posterior_mean import GaussianPosteriorMean
from iclab.analysis.compare import Predictor
from iclab.studies.garg.input_shifts import INPUT_SHIFT_KINDS
from iclab.studies.shift.laws import (
    ALL_SHIFT_KINDS,
    SCALE_KINDS,
    check_value,
    input_shifted_law,
    shifted_law,
)
from iclab.studies.shift.outputs import write_shift_outputs
from iclab.studies.shift.population import gd_readout, shifted_population_loss
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from iclab.utils.threads import intra_op_threads

ELEMENTS_PER_CHUNK = 4_000_000
PREDICTORS = ("model", "ols", "ridge", "gd", "bayes")
Readout = tuple[np.ndarray, np.ndarray]


def _check_inputs(base: LinearGaussian, gamma_star: np.ndarray, readout: Readout | None,
                  prompts: int) -> tuple[np.ndarray, Readout | None]:
    d = base.d
    gamma = np.asarray(gamma_star, dtype=np.float64)
    if gamma.shape != (d, d) or not np.all(np.isfinite(gamma)):
        raise ConfigError(f"gamma_star must be a finite ({d}, {d}) matrix, got shape {gamma.shape}")
    if isinstance(prompts, bool) or not isinstance(prompts, int) or prompts < 2:
        raise ConfigError(f"prompts must be an integer >= 2, got {prompts!r}")
    if readout is None:
        return gamma, None
    u, M = (np.asarray(part, dtype=np.float64) for part in readout)
    if u.shape != (d + 1,) or M.shape != (d + 1, d):
        raise ConfigError(f"the read-out must be u: ({d + 1},) and M: ({d + 1}, {d}), "
                          f"got {u.shape} and {M.shape}")
    return gamma, (u, M)


def evaluate_shift(
    predictor: Predictor,
    readout: Readout | None,
    base: LinearGaussian,
    gamma_star: np.ndarray,
    kind: str,
    values: Sequence[float],
    prompts: int,
    seed: int,
    *,
    normalise: bool = False,
) -> list[dict[str, Any]]:
    """One row per value: value, {p}_loss and {p}_loss_stderr for p in PREDICTORS, exact_loss
    (None without a read-out) and gd_exact_loss.

    predictor: called on float64 CPU tensors (pass a float64 copy of a float32 model);
    readout: (u: (d+1,), M: (d+1, d)) or None (None for a model whose prediction is not
    u^T Z M x_q, e.g. softmax attention or an LSA that attends to the query); ``normalise``: the
    model divides its sum by n, so its prediction is u^T Z M x_q / n at the TEST n (pass the
    raw M). gamma_star: (d, d); prompts >= 2 per value. Every value is checked (ConfigError)
    before anything is computed.
    """
    gamma, checked_readout = _check_inputs(base, gamma_star, readout, prompts)
    if len(values) == 0:
        raise ConfigError("give at least one value to evaluate")
    checked = [check_value(kind, value, ALL_SHIFT_KINDS) for value in values]
    exact = kind not in INPUT_SHIFT_KINDS     # Garg et al.'s input shifts: Monte Carlo only
    laws: list[Any] = [shifted_law(base, kind, value) if exact else
                       input_shifted_law(base, kind, value) for value in checked]
    fixed: dict[str, Predictor] = {
        "model": predictor,
        "ols": LeastSquares(),
        "ridge": BayesPosteriorMean(float(base.sigma), base.sigma_w),
        "gd": PreconditionedGD(gamma),
    }
    rows = []
    for value, law in zip(checked, laws, strict=True):
        predictors: dict[str, Predictor] = {
            **fixed, "bayes": GaussianPosteriorMean(law.sigma, law.cov_w, law.w_mean),
        }
        measured = _measure(predictors, law, prompts, seed)
        row: dict[str, Any] = {"value": value}
        for name in PREDICTORS:
            row[f"{name}_loss"], row[f"{name}_loss_stderr"] = measured[name]
        row["exact_loss"] = (None if checked_readout is None or not exact
                             else shifted_population_loss(*checked_readout, law, normalise))
        row["gd_exact_loss"] = shifted_population_loss(*gd_readout(gamma), law) if exact \
            else None
        rows.append(row)
    return rows


def _measure(predictors: dict[str, Predictor], law: Any, prompts: int, seed: int
             ) -> dict[str, tuple[float, float]]:
    """(mean, stderr) of each predictor's squared error on the same ``prompts`` prompts."""
    generator = make_generator(seed, "shift")
    chunk = max(1, min(prompts, ELEMENTS_PER_CHUNK // ((law.n + 1) * (law.d + 1))))
    sums = {name: [0.0, 0.0] for name in predictors}
    done = 0
    with torch.no_grad(), intra_op_threads(1):
        while done < prompts:
            size = min(chunk, prompts - done)
            batch = law.sample_prompts(size, generator).to(torch.float64)
            for name, predict in predictors.items():
                error = (predict(batch.X, batch.y, batch.x_q) - batch.y_q) ** 2
                sums[name][0] += float(error.sum())
                sums[name][1] += float((error**2).sum())
            done += size
    result = {}
    for name, (total, total_sq) in sums.items():
        mean = total / prompts
        variance = max(total_sq / prompts - mean**2, 0.0) * prompts / (prompts - 1)
        result[name] = (mean, math.sqrt(variance / prompts))
    return result


def curve_values(kind: str, values: Sequence[float], points: int = 65) -> list[float]:
    """A dense grid spanning ``values`` for drawing exact curves, the values themselves included.

    Geometric for scales and n (integers for n), linear for sigma and w-mean.
    """
    low, high = float(min(values)), float(max(values))
    if kind in (*SCALE_KINDS, "n") and low > 0:
        grid = np.geomspace(low, high, points)
    else:
        grid = np.linspace(low, high, points)
    merged = np.union1d(grid, np.asarray(values, dtype=np.float64))
    if kind == "n":
        merged = np.unique(np.round(merged))
    return [float(value) for value in merged]


def shift_curves(
    readout: Readout | None,
    base: LinearGaussian,
    gamma_star: np.ndarray,
    kind: str,
    values: Sequence[float],
    points: int = 65,
    *,
    normalise: bool = False,
) -> dict[str, tuple[list[float], list[float]]]:
    """Exact loss curves on a dense grid: {"model": (grid, losses)} (with a read-out; its
    ``normalise`` as in ``evaluate_shift``) and {"gd": (grid, losses)} for one-step GD with
    Gamma*; none for Garg et al.'s input shifts (no exact loss)."""
    if kind in INPUT_SHIFT_KINDS:
        return {}
    grid = curve_values(kind, values, points)
    laws = [shifted_law(base, kind, value) for value in grid]
    curves = {}
    if readout is not None:
        curves["model"] = (grid, [shifted_population_loss(*readout, law, normalise)
                                  for law in laws])
    gd = gd_readout(np.asarray(gamma_star, dtype=np.float64))
    curves["gd"] = (grid, [shifted_population_loss(*gd, law) for law in laws])
    return curves


__all__ = [
    "PREDICTORS",
    "curve_values",
    "evaluate_shift",
    "gd_readout",
    "shift_curves",
    "write_shift_outputs",
]
