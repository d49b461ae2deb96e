"""result.json's numbers for a run on a task pool (``iclab.studies.pool.family``).

The model and three baselines, dMMSE (the pool's Bayes predictor), ridge at the prior (the
posterior mean under w ~ N(0, Sigma_w)) and least squares, are measured on the same prompts
twice: tasks drawn from the pool (``*_pool``, the training law) and fresh tasks from the prior
(``*_fresh``). The reference is the pool's exact optimal one-layer LSA (``optimum``):
``loss_star`` is its loss on the pool, the number the verdict compares ``test_loss`` (the pool
loss) with; ``loss_star_fresh`` is the same weights' exact loss on fresh tasks. For a model
with a read-out, ``loss_exact`` is the exact pool loss of its weights (u, M) and ``loss_local``
the local minimum of the pool loss that L-BFGS reaches from them (section 15.2): the pool loss
has non-global local minima, and a trained model can end in one.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import torch

from iclab.algorithms.baselines import BayesPosteriorMean, LeastSquares
from iclab.analysis.readout import nuisance_shares
from iclab.models.base import Model
from iclab.studies.pool.dmmse import PoolPosteriorMean
from iclab.studies.pool.loss import PoolLoss
from iclab.studies.pool.optimum import local_optimum, pool_optimum
from iclab.theory.population import PopulationLoss
from iclab.utils.seeding import make_generator

ELEMENTS_PER_CHUNK = 4_000_000
NUISANCE_PROMPTS = 20_000
Predictor = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def losses(predictors: dict[str, Predictor], sample: Callable[..., Any], prompts: int,
           generator: torch.Generator, per_prompt: int) -> dict[str, tuple[float, float]]:
    """Each predictor's mean squared error on the same ``prompts`` prompts drawn by
    ``sample(size, generator)`` in chunks, and its standard error: name -> (mean, se)."""
    chunk = max(1, min(prompts, ELEMENTS_PER_CHUNK // per_prompt))
    sums = {name: [0.0, 0.0] for name in predictors}
    count = 0
    with torch.no_grad():
        while count < prompts:
            size = min(chunk, prompts - count)
            batch = sample(size, generator).to(torch.float64)
            for name, predictor in predictors.items():
                error = (predictor(batch.X, batch.y, batch.x_q) - batch.y_q) ** 2
                sums[name][0] += float(error.sum())
                sums[name][1] += float((error**2).sum())
            count += size
    out = {}
    for name, (total, total_sq) in sums.items():
        mean = total / count
        variance = max(total_sq / count - mean**2, 0.0) * count / (count - 1)
        out[name] = (mean, math.sqrt(variance / count))
    return out


def evaluate_pool(model: Model, task: Any, eval_prompts: int, seed: int) -> dict[str, Any]:
    """The keys of a pooled run (see the module doc and docs/guide/train.md)."""
    prior, pool = task.prior, task.task_pool
    d, n, sigma = task.d, task.n, task.sigma
    exact = PoolLoss(pool, n, sigma, prior.sigma_x)
    optimum = pool_optimum(exact, seed=seed)
    model64 = copy.deepcopy(model).to("cpu", torch.float64)
    predictors: dict[str, Predictor] = {
        "model": model64, "dmmse": PoolPosteriorMean(pool, sigma),
        "ridge": BayesPosteriorMean(sigma, prior.sigma_w, d), "ols": LeastSquares()}
    per_prompt = (n + 1) * (d + 1) + len(pool) * (n + 1)
    on_pool = losses(predictors, task.sample_prompts, eval_prompts,
                     make_generator(seed, "eval"), per_prompt)
    fresh = losses(predictors, prior.sample_prompts, eval_prompts,
                   make_generator(seed, "eval-fresh"), per_prompt)
    population = PopulationLoss.from_task(prior)
    result: dict[str, Any] = {
        "test_loss": on_pool["model"][0], "test_loss_stderr": on_pool["model"][1],
        "test_loss_pool": on_pool["model"][0], "test_loss_pool_stderr": on_pool["model"][1],
        "test_loss_fresh": fresh["model"][0], "test_loss_fresh_stderr": fresh["model"][1],
        "tasks": len(pool),
        "loss_star": optimum.loss,
        "loss_star_nuisance_free": optimum.loss_nuisance_free,
        "loss_star_fresh": float(population(torch.as_tensor(optimum.u),
                                            torch.as_tensor(optimum.M))),
        "loss_star_reference": "the exact optimal one-layer LSA of the task pool "
                               "(docs/theory.md section 15)",
        "gamma_star": optimum.gamma.tolist(),
        "nuisance_star": {key: value.tolist() for key, value in optimum.nuisance.items()},
        "baselines": {name: {"loss_pool": on_pool[name][0],
                             "loss_pool_stderr": on_pool[name][1],
                             "loss_fresh": fresh[name][0], "loss_fresh_stderr": fresh[name][1]}
                      for name in ("dmmse", "ridge", "ols")},
    }
    if model.has_readout:
        learned = model.readout(n)
        prompts = task.sample_prompts(min(NUISANCE_PROMPTS, eval_prompts),
                                      make_generator(seed, "nuisance")).to(torch.float64)
        attend_query = model.attends_query()
        result["gamma"] = learned.gamma.tolist()
        result["nuisance"] = nuisance_shares(learned, prompts, attend_query).as_dict()
        if not attend_query:  # the exact pool loss of its weights, and the local optimum there
            u, M = torch.as_tensor(learned.u), torch.as_tensor(learned.M)
            result["loss_exact"] = float(exact(u, M))
            result["loss_local"] = local_optimum(exact, u) if float(u.norm()) > 0 else \
                result["loss_exact"]
    return result
