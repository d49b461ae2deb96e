"""The squared error divided by d at every number of in-context examples k = 0..n.

One set of prompts of n examples and a query is drawn from the "prefix" stream; with the
query appended as example n + 1, the k-th point of every curve is the error of predicting
y_(k+1) from examples 1..k and x_(k+1), averaged over the prompts, with its standard error:

- the model: ``predict_prefixes`` where it declares ``has_prefix_predictions`` (one pass);
  any other model is applied to each prefix (the prompt truncated to k examples, x_(k+1) as
  its query) for k >= 1, and has no point at k = 0;
- the generic baselines (``generic_baselines``) and the family's own
  (``family_baselines``), on the same prompts (the first ``max_prompts`` of
  them for a slow per-prompt fit that declares it: ``predictor_prompts`` says how many); every
  baseline predicts 0, the prior mean, from an empty prompt (k = 0) without being called;
- the exact curves of ``iclab.theory.prefix`` for isotropic Gaussian prompts (least squares,
  averaging, and the Bayes predictor at sigma = 0); null where the expectation is infinite.

Arithmetic in float64 on the CPU. Rows: one per k with ``k``, then per predictor NAME the keys
NAME and NAME_stderr, then NAME_exact for each closed form.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch

from iclab.algorithms.base import InContextPredictor
from iclab.models.base import Model
from iclab.studies.transformer.closed_forms import (
    averaging_error,
    bayes_noiseless_error,
    least_squares_error,
)
from iclab.studies.transformer.family_baselines import family_baselines, prompt_limit
from iclab.studies.transformer.generic_baselines import generic_baselines, standard_isotropic
from iclab.tasks.base import TaskFamily
from iclab.utils.seeding import make_generator

PREFIX_PROMPTS = 5000
"""Prompts of the prefix curves (at most the run's eval_prompts)."""
MODEL = "model"


def _mean_and_stderr(errors: torch.Tensor, d: int) -> tuple[float, float]:
    """errors: (P,) squared errors -> (mean / d, standard error / d)."""
    count = errors.shape[0]
    mean = float(errors.mean())
    stderr = float(errors.std(unbiased=True)) / math.sqrt(count) if count > 1 else 0.0
    return mean / d, stderr / d


def model_prefix_predictions(model: Model, X: torch.Tensor, y: torch.Tensor
                             ) -> list[torch.Tensor | None]:
    """X: (P, m, d), y: (P, m) -> m entries, the k-th the (P,) predictions of y_(k+1) from the
    first k examples and x_(k+1); None at k = 0 for a model without prefix predictions."""
    with torch.no_grad():
        if model.has_prefix_predictions:
            all_prefixes = model.predict_prefixes(X, y)                      # (P, m)
            return list(all_prefixes.unbind(1))
        out: list[torch.Tensor | None] = [None]
        out += [model(X[:, :k], y[:, :k], X[:, k]) for k in range(1, X.shape[1])]
        return out


def _baseline_predictions(baseline: InContextPredictor, X: torch.Tensor, y: torch.Tensor
                          ) -> list[torch.Tensor]:
    """The baseline's predictions at every k on the first ``prompt_limit`` prompts (all of
    them but for the slow per-prompt fits, which declare ``max_prompts``)."""
    used = prompt_limit(baseline, X.shape[0])
    X, y = X[:used], y[:used]
    out = [X.new_zeros(X.shape[0])]
    out += [baseline.predict(X[:, :k], y[:, :k], X[:, k]) for k in range(1, X.shape[1])]
    return out


def exact_curves(task: TaskFamily) -> dict[str, list[float]]:
    """name -> E[(yhat - y_q)^2] / d at k = 0..n (inf where infinite) for the closed forms
    that apply to ``task``: none unless it is isotropic Gaussian."""
    if not standard_isotropic(task):
        return {}
    d, sigma, ks = task.d, float(task.sigma), range(task.n + 1)
    curves = {"ols": [least_squares_error(k, d, sigma) / d for k in ks],
              "averaging": [averaging_error(k, d, sigma) / d for k in ks]}
    if sigma == 0:
        curves["bayes"] = [bayes_noiseless_error(k, d) / d for k in ks]
    return curves


def prefix_curves(model: Model, task: TaskFamily, prompts: int, seed: int) -> dict[str, Any]:
    """The prefix evaluation of ``model`` on ``prompts`` fresh prompts of ``task`` (module
    docstring): {"d", "n", "sigma", "family", "prompts", "seed", "predictors",
    "predictor_prompts", "exact", "rows"}."""
    model64 = copy.deepcopy(model).to("cpu", torch.float64).eval()
    batch = task.sample_prompts(prompts, make_generator(seed, "prefix")).to(torch.float64)
    X = torch.cat([batch.X, batch.x_q[:, None]], dim=1)                      # (P, n+1, d)
    y = torch.cat([batch.y, batch.y_q[:, None]], dim=1)                      # (P, n+1)
    d = task.d
    predictions: dict[str, list[torch.Tensor | None]] = {
        MODEL: model_prefix_predictions(model64, X, y)}
    baselines = generic_baselines(task) + family_baselines(task, seed)
    with torch.no_grad():
        for baseline in baselines:
            predictions[baseline.name] = list(_baseline_predictions(baseline, X, y))
    exact = exact_curves(task)
    rows: list[dict[str, Any]] = []
    for k in range(task.n + 1):
        row: dict[str, Any] = {"k": k}
        for name, per_k in predictions.items():
            guess = per_k[k]
            if guess is None:
                row[name], row[f"{name}_stderr"] = None, None
            else:
                row[name], row[f"{name}_stderr"] = _mean_and_stderr(
                    (guess.to(torch.float64) - y[:guess.shape[0], k]).square(), d)
        for name, curve in exact.items():
            row[f"{name}_exact"] = curve[k] if math.isfinite(curve[k]) else None
        rows.append(row)
    return {"d": d, "n": task.n, "sigma": float(task.sigma), "family": task.name,
            "prompts": prompts, "seed": seed, "predictors": list(predictions),
            "predictor_prompts": {name: int(next(p for p in per_k if p is not None).shape[0])
                                  for name, per_k in predictions.items()},
            "exact": list(exact), "rows": rows}


def prefix_summary(curves: dict[str, Any]) -> dict[str, Any]:
    """result.json's prefix keys: the model's error / d at k = d and k = 2d (where <= n), its
    standard error, least squares' error / d there and the ratio of the two (null where least
    squares' error / d is below 1e-8, numerically 0, as at sigma = 0 and k >= d, where the
    ratio means nothing)."""
    rows, d = curves["rows"], curves["d"]
    out: dict[str, Any] = {}
    for label, k in (("d", d), ("2d", 2 * d)):
        if k >= len(rows):
            continue
        row = rows[k]
        model, ols = row.get(MODEL), row.get("ols")
        out[f"prefix_error_at_{label}"] = model
        out[f"prefix_error_at_{label}_stderr"] = row.get(f"{MODEL}_stderr")
        out[f"prefix_ols_error_at_{label}"] = ols
        out[f"prefix_ratio_to_ols_at_{label}"] = (
            model / ols if model is not None and ols is not None and ols > 1e-8 else None)
    return out
