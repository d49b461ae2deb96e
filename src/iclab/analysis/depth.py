"""What an L-layer LSA learned, against the optimal L-step gradient descent (result.json).

For a model with several layers (``iclab.models.lsa.deep``) on a family where the multi-step
theory exists (``iclab.theory.depth.multistep``):

- ``layers``, and the optimal L-step GD: ``gd_steps_etas`` (sorted), ``gd_steps_loss`` and
  ``gd_steps_loss_stderr`` (0 when exact), ``gd_steps_method``, the Krylov bound;
- sparse parameterisation: each layer is one step of preconditioned GD on
  1/2 sum_i (y_i - w^T x_i)^2 / n with preconditioner A_l; ``layer_steps`` are the sorted
  scalar parts tr(A_l)/d divided by n, in the theory's convention (no 1/n in the gradient),
  so directly comparable with ``gd_steps_etas``; ``layer_steps_rel_err`` the largest
  |a_l / eta_l - 1| after sorting both; ``layer_isotropy_err`` each layer's
  ||A_l - a_l I||_F / ||A_l||_F;
- von Oswald et al.'s measures against the optimal L-step GD (``vs_optimal_gd_steps``) and
  ridge at the training prior (``vs_ridge``), on fresh prompts.
"""

from __future__ import annotations

from typing import Any

from iclab.algorithms.baselines import BayesPosteriorMean, KStepGD
from iclab.analysis.compare import compare_with
from iclab.analysis.layer_readout import compare_steps, read_layers
from iclab.analysis.verdict import LOSS_RESOLUTION
from iclab.models.base import Model
from iclab.models.lsa.deep import DeepLinearSelfAttention
from iclab.tasks.base import TaskFamily
from iclab.theory.depth.multistep import EXACT, MultiStepOptimum, multistep_optimum
from iclab.theory.depth.step_curvature import isotropic_steps_loss, step_tolerance
from iclab.utils.batches import Prompts
from iclab.utils.errors import ConfigError


def depth_optimum(layers: int, task: TaskFamily, seed: int) -> MultiStepOptimum:
    """The optimal ``layers``-step GD on ``task``."""
    return multistep_optimum(task, layers, seed=seed, preconditioned=False)


def depth_results(model: Model, model64: Model, task: TaskFamily,
                  steps: MultiStepOptimum, prompts: Prompts) -> dict[str, Any]:
    """The depth keys of result.json (module docstring) of an L-layer lsa; ``model64`` a
    float64 CPU copy."""
    if not isinstance(model, DeepLinearSelfAttention):
        raise ConfigError(f"the depth results need the L-layer lsa model, not "
                          f"{type(model).__name__}")
    result: dict[str, Any] = {"layers": model.layers, "parameterisation":
                              model.options.parameterisation, **steps.to_json()}
    if model.is_sparse:
        layers = read_layers(model)
        n = task.n
        comparison = compare_steps([layer.step / n for layer in layers], steps.etas)
        result["layer_steps"] = comparison.learned
        result["layer_steps_rel_err"] = comparison.max_rel_err
        result["layer_isotropy_err"] = [layer.isotropy_err for layer in layers]
        result.update(_step_tolerance(task, steps, comparison.learned))
    result["vs_optimal_gd_steps"] = compare_with(model64, KStepGD(list(steps.etas)), prompts)
    if task.gaussian:
        ridge = BayesPosteriorMean(float(task.sigma), getattr(task, "sigma_w"))  # noqa: B009
        result["vs_ridge"] = compare_with(model64, ridge, prompts)
    return result



def _step_tolerance(task: TaskFamily, steps: MultiStepOptimum,
                    learned: list[float]) -> dict[str, float]:
    """layer_steps_tolerance and layer_steps_loss (module docstring), or {} where the exact
    L-step loss does not apply."""
    exact = isotropic_steps_loss(task) if steps.method == EXACT else None
    tolerance = None if exact is None else \
        step_tolerance(exact, steps.etas, steps.loss, LOSS_RESOLUTION)
    if exact is None or tolerance is None:
        return {}
    try:
        loss = exact.loss_of_steps(learned)
    except OverflowError:  # steps so large that their loss is not a float
        return {"layer_steps_tolerance": tolerance.tolerance}
    return {"layer_steps_tolerance": tolerance.tolerance, "layer_steps_loss": loss}
