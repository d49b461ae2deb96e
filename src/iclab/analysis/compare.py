"""von Oswald et al.'s two measures between a model and a reference algorithm on fresh prompts.

- mean absolute prediction difference: mean over prompts of |yhat_model - yhat_reference|;
- mean cosine similarity of the input sensitivities d yhat / d x_q of the two predictors.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from iclab.utils.batches import Prompts

SENSITIVITY_CHUNK = 2048
"""Prompts per backward pass of ``input_sensitivity``."""

Predictor = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
"""Anything mapping (X: (B, n, d), y: (B, n), x_q: (B, d)) to yhat: (B,)."""


def mean_abs_prediction_difference(
    model: Predictor, reference: Predictor, prompts: Prompts
) -> float:
    """Mean over prompts of |model - reference| at the query."""
    with torch.no_grad():
        difference = model(prompts.X, prompts.y, prompts.x_q) - reference(
            prompts.X, prompts.y, prompts.x_q
        )
    return float(difference.abs().mean())


def input_sensitivity(predictor: Predictor, prompts: Prompts) -> torch.Tensor:
    """d yhat / d x_q for every prompt: (B, d).

    Each prompt's prediction depends on its own x_q only, so the gradient of the batch sum
    gives every prompt's sensitivity in one backward pass (one per ``SENSITIVITY_CHUNK``
    prompts, which bounds the memory the backward pass keeps: a transformer's activations).
    """
    parts = []
    for start in range(0, prompts.x_q.shape[0], SENSITIVITY_CHUNK):
        part = slice(start, start + SENSITIVITY_CHUNK)
        x_q = prompts.x_q[part].detach().clone().requires_grad_(True)
        with torch.enable_grad():
            total = predictor(prompts.X[part], prompts.y[part], x_q).sum()
            (gradient,) = torch.autograd.grad(total, x_q)
        parts.append(gradient)
    return torch.cat(parts)


def input_sensitivity_cosine(model: Predictor, reference: Predictor, prompts: Prompts) -> float:
    """Mean over prompts of cos(d yhat_model / d x_q, d yhat_reference / d x_q)."""
    a = input_sensitivity(model, prompts)
    b = input_sensitivity(reference, prompts)
    cosine = torch.nn.functional.cosine_similarity(a, b, dim=-1, eps=1e-30)
    return float(cosine.mean())


def compare_with(model: Predictor, reference: Predictor, prompts: Prompts) -> dict[str, float]:
    """Both measures: {"mean_abs_prediction_difference", "sensitivity_cosine"}."""
    return {
        "mean_abs_prediction_difference": mean_abs_prediction_difference(model, reference, prompts),
        "sensitivity_cosine": input_sensitivity_cosine(model, reference, prompts),
    }
