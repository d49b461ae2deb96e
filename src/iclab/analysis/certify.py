"""Certify a trained model: how far its loss is above the span bound (docs/theory.md section 6).

The span optimum (``iclab.theory.span``) is a lower bound on the loss of every one-layer LSA on
the run's task family. Two comparisons with it:

- combined: the run's ``test_loss`` (result.json, its own "eval" prompts) minus the span loss
  (independent "span-test" prompts), in units of sqrt(se_model^2 + se_span^2);
- paired: both predictors on the same fresh "certify" prompts; the mean difference of their
  squared errors and its standard error, far more sensitive than the combined one.

The fitted span coefficients' loss exceeds the exact bound by their estimation error (about
p / fit_prompts relatively, p features); both comparisons subtract the span's estimate of it
(``estimation_excess``), so a run at the optimum sits about 0 standard errors above the bound
and a clearly positive z says the model is not the optimal LSA.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from iclab.models.base import Model
from iclab.tasks.base import TaskFamily
from iclab.theory.span import TEST_PROMPTS, SpanOptimum, span_optimum
from iclab.utils.seeding import make_generator

ELEMENTS_PER_CHUNK = 4_000_000


def paired_excess(
    model: Model, span: SpanOptimum, task: TaskFamily, prompts: int, seed: int
) -> tuple[float, float]:
    """Mean of (model - y_q)^2 - (span - y_q)^2 on shared fresh prompts, and its stderr."""
    chunk = max(1, ELEMENTS_PER_CHUNK // max(span.features, (task.n + 1) * (task.d + 1)))
    total, total_sq, done, index = 0.0, 0.0, 0, 0
    with torch.no_grad():
        while done < prompts:
            size = min(chunk, prompts - done)
            batch = task.sample_prompts(size, make_generator(seed, "certify", index),
                                        torch.float64)
            model_error = (model(batch.X, batch.y, batch.x_q) - batch.y_q) ** 2
            span_error = (span.predict(batch) - batch.y_q) ** 2
            difference = model_error - span_error
            total += float(difference.sum())
            total_sq += float((difference**2).sum())
            done, index = done + size, index + 1
    mean = total / prompts
    variance = max(total_sq / prompts - mean**2, 0.0) * prompts / (prompts - 1)
    return mean, math.sqrt(variance / prompts)


def _ratio(value: float, stderr: float) -> float | None:
    """value / stderr, or None where that is no finite number (no spread, or overflow)."""
    if not (math.isfinite(value) and math.isfinite(stderr) and stderr > 0):
        return None
    z = value / stderr
    return z if math.isfinite(z) else None


def certify_model(
    model: Model,
    task: TaskFamily,
    result: dict[str, Any],
    fit_prompts: int | None = None,
    test_prompts: int = TEST_PROMPTS,
    seed: int = 0,
    query_cubic: bool = False,
) -> dict[str, Any]:
    """Compare a trained model (float64, CPU) and its run's ``result`` (test_loss,
    test_loss_stderr, loss_star) with the span bound of ``task`` (see module doc)."""
    span = span_optimum(task, fit_prompts, test_prompts, seed, query_cubic=query_cubic)
    excess = float(result["test_loss"]) - span.loss
    excess_se = math.hypot(float(result["test_loss_stderr"]), span.loss_stderr)
    paired, paired_se = paired_excess(model, span, task, test_prompts, seed)
    paired += span.estimation_excess
    report = {
        "test_loss": float(result["test_loss"]),
        "test_loss_stderr": float(result["test_loss_stderr"]),
        "bound": span.loss,
        "bound_stderr": span.loss_stderr,
        "bound_heldout_loss": span.heldout_loss,
        "bound_estimation_excess": span.estimation_excess,
        "bound_fit_loss": span.fit_loss,
        "excess": excess,
        "excess_stderr": excess_se,
        "z": _ratio(excess, excess_se),
        "paired_excess": paired,
        "paired_excess_stderr": paired_se,
        "z_paired": _ratio(paired, paired_se),
        "loss_star": result.get("loss_star"),
        "span": {
            "gamma": span.gamma.tolist(), "eta": span.eta, "eta_stderr": span.eta_stderr,
            "isotropy_err": span.isotropy_err, "nuisance": span.nuisance,
            "features": span.features, "fit_prompts": span.fit_prompts,
            "test_prompts": span.test_prompts, "query_cubic": span.query_cubic,
        },
    }
    checked: dict[str, Any] = _finite_or_none(report)
    return checked


def _finite_or_none(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None: no NaN or infinity is ever
    written or printed (a verdict then says what is missing)."""
    if isinstance(value, dict):
        return {key: _finite_or_none(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_or_none(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
