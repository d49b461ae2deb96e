"""Per-layer read-out of a sparse L-layer LSA: the preconditioned GD it runs.

A sparse L-layer LSA (``iclab.models.lsa.deep``) runs exactly L steps of preconditioned GD,

    w_(l+1) = w_l + A_l X^T (y - X w_l) / n,      w_0 = 0,      yhat = x_q^T w_L.

Each layer is read as its preconditioner A_l, its scalar part a_l = tr(A_l)/d (a step size on
the 1/n-normalised least-squares gradient) and its isotropy error
||A_l - a_l I||_F / ||A_l||_F. Scalar steps commute (1 - t q(t) = prod_l (1 - a_l t)), so the
learned steps are compared with the optimal ones after sorting both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from iclab.models.lsa.deep import DeepLinearSelfAttention
from iclab.utils.errors import ConfigError


@dataclass(frozen=True)
class LayerReadout:
    """One layer: preconditioner A_l (d, d) float64, step a_l = tr(A_l)/d, isotropy error."""

    preconditioner: np.ndarray
    step: float
    isotropy_err: float


def read_layers(model: DeepLinearSelfAttention) -> list[LayerReadout]:
    """The L layers of a sparse model, first layer first (ConfigError for a full model)."""
    with torch.no_grad():
        stack = model.layer_preconditioners().detach().to("cpu", torch.float64).numpy()
    readouts = []
    for A in stack:
        step = float(np.trace(A)) / A.shape[0]
        norm = float(np.linalg.norm(A))
        error = float(np.linalg.norm(A - step * np.eye(A.shape[0]))) / norm if norm > 0 else 0.0
        readouts.append(LayerReadout(preconditioner=A.copy(), step=step, isotropy_err=error))
    return readouts


@dataclass(frozen=True)
class StepComparison:
    """Sorted learned steps a_l and sorted optimal eta_l, |a_l / eta_l - 1| for each pair, and
    the largest of those."""

    learned: list[float]
    optimal: list[float]
    rel_err: list[float]
    max_rel_err: float


def compare_steps(
    learned: Sequence[LayerReadout] | Sequence[float], optimal: Sequence[float]
) -> StepComparison:
    """Pair the sorted learned steps with the sorted optimal step sizes of L-step GD."""
    steps = [item.step if isinstance(item, LayerReadout) else float(item) for item in learned]
    etas = [float(eta) for eta in optimal]
    if len(steps) != len(etas) or not etas:
        raise ConfigError(f"need one optimal step size per layer: {len(steps)} layers, "
                          f"{len(etas)} step sizes")
    if any(eta == 0 or not np.isfinite(eta) for eta in etas):
        raise ConfigError(f"optimal step sizes must be finite and non-zero, got {etas}")
    steps, etas = sorted(steps), sorted(etas)
    errors = [abs(step / eta - 1.0) for step, eta in zip(steps, etas, strict=True)]
    return StepComparison(learned=steps, optimal=etas, rel_err=errors, max_rel_err=max(errors))
