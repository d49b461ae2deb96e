"""Measures for a model without a linear read-out (softmax attention, for instance).

Such a model has no Gamma to read off, so it is judged by its predictions, against three
reference algorithms on the same fresh prompts of the training law (von Oswald et al.'s two
measures, ``iclab.analysis.compare``):

- ``vs_optimal_gd``: one step of preconditioned GD with the training optimum's Gamma*,
  x_q^T Gamma* X^T y (the key ``result.json`` uses for the LSA as well);
- ``vs_ridge``: ridge at the training prior, the posterior mean (penalty sigma^2 Sigma_w^{-1});
- ``vs_ols``: minimum-norm least squares.

Each entry holds ``mean_abs_prediction_difference`` (mean |yhat_model - yhat_ref|),
``sensitivity_cosine`` (mean cosine between d yhat / d x_q of the two) and
``reference_loss`` (the reference's mean squared error on the same prompts, for scale).
Computed with one intra-op thread (see ``iclab.studies.shift.measure``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from iclab.algorithms.baselines import BayesPosteriorMean, LeastSquares
from iclab.algorithms.gd import PreconditionedGD
from iclab.analysis.compare import Predictor, compare_with
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from iclab.utils.threads import intra_op_threads

REFERENCE_PROMPTS = 20_000


def reference_measures(
    model: Predictor,
    task: LinearGaussian,
    gamma_star: np.ndarray,
    prompts: int = REFERENCE_PROMPTS,
    seed: int = 0,
) -> dict[str, dict[str, float]]:
    """{"vs_optimal_gd", "vs_ridge", "vs_ols"} -> the measures above, JSON-ready floats.

    model: (X: (B, n, d), y: (B, n), x_q: (B, d)) -> (B,), called on float64 tensors and
    differentiated in x_q; gamma_star: (d, d); ``prompts`` >= 1 fresh prompts from the seeded
    stream "reference-measures".
    """
    gamma = np.asarray(gamma_star, dtype=np.float64)
    if gamma.shape != (task.d, task.d) or not np.all(np.isfinite(gamma)):
        raise ConfigError(f"gamma_star must be a finite ({task.d}, {task.d}) matrix, "
                          f"got shape {gamma.shape}")
    if isinstance(prompts, bool) or not isinstance(prompts, int) or prompts < 1:
        raise ConfigError(f"prompts must be an integer >= 1, got {prompts!r}")
    batch = task.sample_prompts(prompts, make_generator(seed, "reference-measures"))
    batch = batch.to(torch.float64)
    references: dict[str, Predictor] = {
        "vs_optimal_gd": PreconditionedGD(gamma),
        "vs_ridge": BayesPosteriorMean(float(task.sigma), task.sigma_w),
        "vs_ols": LeastSquares(),
    }
    result: dict[str, dict[str, float]] = {}
    with intra_op_threads(1):
        for key, reference in references.items():
            measures: dict[str, Any] = compare_with(model, reference, batch)
            with torch.no_grad():
                error = (reference(batch.X, batch.y, batch.x_q) - batch.y_q) ** 2
            measures["reference_loss"] = float(error.mean())
            result[key] = {name: float(value) for name, value in measures.items()}
    return result
