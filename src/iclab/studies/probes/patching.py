"""Task vectors and patching (``iclab patch RUN_DIR``): how much of the task a layer's residual
stream carries at the query, measured by moving it from one task to another.

For each of ``pairs`` pairs of tasks (w_A, w_B drawn from the family's prior) the run's model
reads ``prompts`` prompts of each task: prompt j of B has its own context and query x_j, and
prompt j of A has A's own context with the same query x_j. At a patchable layer l
(``resid.l``, ``iclab.models.hooks``), the task vector of a task is the mean of resid.l at the
query position over its prompts (Hendel et al. 2023, for regression Yang et al. 2025,
arXiv 2501.09240); patching replaces, in every B prompt, resid.l at the query by itself plus
v_A - v_B (B's mean exchanged for A's), and the forward continues from there. With yhat_B the
model's prediction on the B prompt, yhat_A its prediction on the A prompt with the same query
and yhat_p the patched one, the moved fraction of a pair is

    f = sum_j (yhat_p - yhat_B)_j (yhat_A - yhat_B)_j / sum_j (yhat_A - yhat_B)_j^2,

0 when the patch changes nothing, 1 when the prediction becomes the source task's. Reported
per layer: the mean of f over the pairs and its standard error; the best layer is the one
with the largest mean.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import torch

from iclab.models.base import Model
from iclab.models.hooks import cache, patchable_names, patching
from iclab.runs.folder import load_trained_model, read_finished_run
from iclab.studies.probes.probe_run import layer_of
from iclab.studies.probes.targets import linear_family
from iclab.utils.batches import Prompts
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from iclab.utils.threads import intra_op_threads


def task_prompts(task: Any, pairs: int, prompts: int, seed: int) -> tuple[Prompts, Prompts]:
    """(A, B): ``pairs`` * ``prompts`` prompts each, pair k's rows k*prompts..; every row of
    A shares its pair's w_A, every row of B its w_B; row j of A and of B share the query."""
    generator = make_generator(seed, "task-vectors")
    d, n = task.d, task.n
    chol_x = torch.as_tensor(np.linalg.cholesky(task.sigma_x), dtype=torch.float64)
    chol_w = torch.as_tensor(np.linalg.cholesky(task.sigma_w), dtype=torch.float64)
    count = pairs * prompts

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator, dtype=torch.float64)

    queries = draw(count, d) @ chol_x.T
    made = []
    for _ in range(2):
        w = (draw(pairs, d) @ chol_w.T).repeat_interleave(prompts, dim=0)     # (count, d)
        X = draw(count, n, d) @ chol_x.T
        y = torch.einsum("bnd,bd->bn", X, w) + task.sigma * draw(count, n)
        made.append(Prompts(X=X, y=y, x_q=queries, y_q=(queries * w).sum(-1)))
    return made[0], made[1]


def moved_fractions(model: Model, source: Prompts, target: Prompts, name: str, pairs: int
                    ) -> np.ndarray:
    """The moved fraction f of each pair (module docstring) for patching hook point
    ``name``: (pairs,)."""
    a = cache(model, source.X, source.y, source.x_q, names=[name])
    b = cache(model, target.X, target.y, target.x_q, names=[name])
    width = a[name].shape[-1]
    v_a = a[name][:, -1].reshape(pairs, -1, width).mean(1)
    v_b = b[name][:, -1].reshape(pairs, -1, width).mean(1)
    shift = (v_a - v_b).repeat_interleave(a[name].shape[0] // pairs, dim=0)  # (count, F)

    def patch(tensor: torch.Tensor) -> torch.Tensor:
        out = tensor.clone()
        out[:, -1] = out[:, -1] + shift.to(tensor.dtype)
        return out

    model.eval()
    with patching(model, {name: patch}), torch.no_grad():
        patched = model(target.X, target.y, target.x_q)
    toward = (a.prediction - b.prediction).reshape(pairs, -1)
    moved = (patched - b.prediction).reshape(pairs, -1)
    fractions: np.ndarray = ((moved * toward).sum(1) / toward.square().sum(1)).numpy()
    return fractions


def patch_run(run_dir: str | Path, layers: tuple[int, ...] | None, pairs: int, prompts: int,
              seed: int, registries: Any) -> dict[str, Any]:
    """patch.json's content for the finished run in ``run_dir`` (module docstring)."""
    if not 2 <= pairs <= 10_000:
        raise ConfigError(f"pairs must be an integer >= 2 and <= 10000, got {pairs}")
    if not 2 <= prompts <= 100_000:
        raise ConfigError(f"prompts must be an integer >= 2 and <= 100000, got {prompts}")
    path = Path(run_dir)
    config, result = read_finished_run(path, registries.models, registries.families)
    task = config.checked_task(registries.families)
    if not linear_family(task):
        raise ConfigError(f"task vectors need a linear Gaussian family (one w per task); "
                          f"family {task.name!r} is not")
    model = load_trained_model(path, config, registries.models, result)
    names = patchable_names(model)
    if not names:
        raise ConfigError(f"model {model.name!r} declares no patchable hook point "
                          f"(HookPoint.patchable); task vectors need one")
    if layers is not None:
        present = {layer_of(name): name for name in names}
        for layer in layers:
            if layer not in present:
                raise ConfigError(f"layer {layer} has no patchable hook point of model "
                                  f"{model.name!r}; its layers: "
                                  f"{', '.join(map(str, sorted(present)))}")
        names = tuple(present[layer] for layer in layers)
    source, target = task_prompts(task, pairs, prompts, seed)
    rows: list[dict[str, Any]] = []
    for name in names:
        with intra_op_threads(1):  # many small products: faster on one thread when busy
            fractions = moved_fractions(model, source, target, name, pairs)
        rows.append({"hook": name, "layer": layer_of(name),
                     "moved_fraction": float(fractions.mean()),
                     "moved_fraction_stderr": float(fractions.std(ddof=1) / math.sqrt(pairs))})
    best = max(rows, key=lambda row: row["moved_fraction"])
    return {"run": str(path), "model": config.model_name, "family": task.name, "d": task.d,
            "n": task.n, "pairs": pairs, "prompts": prompts, "seed": seed, "rows": rows,
            "best_layer": best["layer"]}
