"""Judge a trained model against the theory: the numbers that go into result.json.

Asked of the model, never assumed: every model gets its test loss, the family's optimal
one-layer LSA loss L* and von Oswald et al.'s measures against the optimal one-step GD
(``vs_optimal_gd``); a model with a linear read-out also gets its effective Gamma (both parts),
eta_hat, the isotropy error, the nuisance shares and the comparison with Gamma*.

Prediction-level quantities use whole prompts drawn fresh from dedicated "eval" and "nuisance"
random streams on the CPU, so they do not depend on the sampler or device used for training.
The prompts are drawn in float32 and the arithmetic is done in float64 (torch's float64
normal sampler is about ten times slower, and rounding a prompt to float32 changes the test
loss by about 1e-7 of itself, far below its standard error).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch

from iclab.algorithms.gd import PreconditionedGD
from iclab.analysis.compare import compare_with
from iclab.analysis.depth import depth_optimum, depth_results
from iclab.analysis.readout import gamma_relative_error, nuisance_shares
from iclab.analysis.reference_measures import reference_measures
from iclab.models.base import Model
from iclab.tasks.base import TaskFamily
from iclab.theory.family_optimum import MONTE_CARLO, family_optimum
from iclab.utils.seeding import make_generator

ELEMENTS_PER_CHUNK = 4_000_000
NUISANCE_PROMPTS = 20_000


def _chunk_size(task: TaskFamily, total: int) -> int:
    per_prompt = (task.n + 1) * (task.d + 1)
    return max(1, min(total, ELEMENTS_PER_CHUNK // per_prompt))


def cpu64(model: Model) -> Model:
    """A float64 copy of ``model`` on the CPU (the model itself is left as it is)."""
    return copy.deepcopy(model).to("cpu", torch.float64)


def test_loss(model: Model, task: TaskFamily, prompts: int, seed: int) -> tuple[float, float]:
    """Mean squared error on ``prompts`` fresh prompts and its standard error (float64)."""
    model64 = cpu64(model)
    generator = make_generator(seed, "eval")
    chunk = _chunk_size(task, prompts)
    total, total_sq, count = 0.0, 0.0, 0
    with torch.no_grad():
        while count < prompts:
            size = min(chunk, prompts - count)
            batch = task.sample_prompts(size, generator).to(torch.float64)
            error = (model64(batch.X, batch.y, batch.x_q) - batch.y_q) ** 2
            total += float(error.sum())
            total_sq += float((error**2).sum())
            count += size
    mean = total / count
    variance = max(total_sq / count - mean**2, 0.0) * count / (count - 1)
    return mean, math.sqrt(variance / count)


def evaluate(model: Model, task: TaskFamily, eval_prompts: int, seed: int,
             depth: int | None = None) -> dict[str, Any]:
    """result.json's numbers (see the README's result.json keys); ``depth``: the depth the
    run's model declares (``TrainConfig.depth``, ``Model.depth_of``), L for an L-layer stack,
    whose depth keys are then added (``iclab.analysis.depth``).

    Always: test_loss, test_loss_stderr, loss_star, eta_star (tr(Gamma*)/d), gamma_star,
    gamma_star_isotropic, vs_optimal_gd (and, for a model without a read-out on a Gaussian
    family, vs_ridge and vs_ols too, each with the reference's own loss). With a read-out:
    eta_hat, eta_rel_err, isotropy_err, gamma, gamma_parts ({"uy_Mx", "my_ux"}, summing to
    gamma), gamma_rel_err, nuisance. Where the optimum is a Monte Carlo estimate (user
    families, user covariate laws): method, eta_star_stderr and loss_star_stderr. For
    correlated contexts: n_eff, the number of independent examples worth as much as the
    prompt's n.
    """
    own = task.own_evaluation(model, eval_prompts, seed)  # a family's own evaluation (a pool)
    if own is not None:
        return dict(own)
    optimum = family_optimum(task, seed=seed)
    eta_star = optimum.eta_or_trace
    loss, stderr = test_loss(model, task, eval_prompts, seed)
    nuisance_set = task.sample_prompts(
        min(NUISANCE_PROMPTS, eval_prompts), make_generator(seed, "nuisance")
    ).to(torch.float64)
    result: dict[str, Any] = {}
    if model.has_readout:
        learned = model.readout(task.n)
        attend_query = model.attends_query()
        result.update({
            "eta_hat": learned.eta_hat,
            "eta_rel_err": abs(learned.eta_hat / eta_star - 1.0),
            "isotropy_err": learned.isotropy_err,
            "gamma": learned.gamma.tolist(),
            "gamma_parts": {name: part.tolist() for name, part in learned.gamma_parts.items()},
            "gamma_rel_err": gamma_relative_error(learned.gamma, optimum.gamma),
            "nuisance": nuisance_shares(learned, nuisance_set, attend_query).as_dict(),
        })
    result.update({
        "eta_star": eta_star,
        "gamma_star": optimum.gamma.tolist(),
        "gamma_star_isotropic": optimum.isotropic,
        "test_loss": loss,
        "test_loss_stderr": stderr,
        "loss_star": optimum.loss,
        "vs_optimal_gd": compare_with(cpu64(model), PreconditionedGD(optimum.gamma),
                                      nuisance_set),
    })
    if optimum.n_eff is not None and math.isfinite(optimum.n_eff):
        result["n_eff"] = optimum.n_eff
    if depth is not None:
        steps = depth_optimum(depth, task, seed)
        result.update(depth_results(model, cpu64(model), task, steps, nuisance_set))
    elif not model.has_readout and task.gaussian:
        # no linear read-out: how close its predictions are to one-step GD, ridge and OLS
        result.update(reference_measures(cpu64(model), task, optimum.gamma,  # type: ignore[arg-type]
                                         min(NUISANCE_PROMPTS, eval_prompts), seed))
    if optimum.method == MONTE_CARLO and optimum.stderr is not None:
        result["method"] = optimum.method
        result["eta_star_stderr"] = optimum.stderr.get("eta")
        result["loss_star_stderr"] = optimum.stderr.get("loss")
    return result
