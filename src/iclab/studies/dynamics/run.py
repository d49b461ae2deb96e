"""``iclab dynamics``: a run's SGD loss curve beside the exact gradient flow of the population
loss from the same initial parameters (docs/guide/dynamics.md, docs/theory.md section 18).

SGD with learning rate lr on fresh batches follows, as lr -> 0, the flow d theta/dt =
-grad L(theta) of the expected batch loss at t = lr x step. The training objective is the
batch mean of (yhat - y_q)^2, an unbiased estimate of the exact loss E[(yhat - y_q)^2] itself
(no factor 1/2), so the times agree with no rescaling.

The measured curve: ``replicates`` independent SGD runs from the run's seeded start, each on
its own stream of batches (replicate r draws from seed + r; replicate 0 is exactly the batches
``iclab train`` would draw). At each logged step each replicate's iterate is measured on its
own ``eval_prompts`` fresh prompts, as a test loss is: ``sgd_loss`` is the mean over
replicates and ``sgd_loss_stderr`` the standard error of that mean across them (what varies:
SGD's batches and the evaluation prompts). The exact population loss of the same iterates is
kept too (``sgd_exact_loss``, its standard error across replicates): it resolves SGD's
stationary excess over the flow, O(lr / batch), which the evaluated curve does not
(docs/guide/dynamics.md).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from iclab.config.schedule import elapsed_times
from iclab.config.train import TrainConfig
from iclab.models.lsa.options import LSAOptions
from iclab.runs.folder import check_out_dir, read_finished_run
from iclab.studies.dynamics.checks import check_honoured, read_sgd_metrics
from iclab.studies.dynamics.cost import check_flow_cost, check_landings
from iclab.studies.dynamics.flow_curve import CONVERGED_GAP, FlowCurve, flow_curve
from iclab.studies.dynamics.heads_loss import HeadsLoss
from iclab.studies.dynamics.outputs import write_dynamics
from iclab.studies.dynamics.plateaus import find_plateaus, merged_drop_time, rank_k_losses
from iclab.tasks.base import TaskFamily
from iclab.training.exact import make_optimizer
from iclab.training.loop import make_train_step
from iclab.training.objective import make_objective
from iclab.training.run_folder import RunFolder
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from iclab.utils.threads import intra_op_threads

DEFAULT_REPLICATES = 16
MAX_REPLICATES = 1000


def check_dynamics_config(config: TrainConfig) -> tuple[TaskFamily, HeadsLoss]:
    """The task and the exact loss in the model's raw parameters, or ConfigError (one line):
    a linear Gaussian family with fresh tasks, the multi-head lsa, plain SGD, no option the
    comparison does not honour (``check_honoured``); the model's and the optimiser's first,
    then every check of ``iclab train``, which builds the family."""
    options = config.model
    if config.model_name != "lsa" or not isinstance(options, LSAOptions) or not (
            options.multi_head or options.deep):
        raise ConfigError("iclab dynamics needs the multi-head lsa model: give --heads H "
                          "and/or --kq separate")
    if options.deep:
        raise ConfigError("iclab dynamics needs the one-layer multi-head lsa model; leave "
                          "--layers, --parameterisation and --looped at their defaults")
    if config.optim.optimizer != "sgd":
        raise ConfigError(f"iclab dynamics compares plain SGD with gradient flow; got "
                          f"optimizer {config.optim.optimizer!r}")
    if config.optim.momentum:
        raise ConfigError(f"iclab dynamics compares plain SGD (momentum 0) with gradient flow; "
                          f"got momentum {config.optim.momentum:g}")
    check_honoured(config)
    task = config.checked_task()
    if not task.gaussian:
        raise ConfigError(f"iclab dynamics needs fresh tasks of the linear Gaussian family "
                          f"(Gaussian, independent covariates, no task pool); got "
                          f"{task.name!r}")
    loss = HeadsLoss(options.kq, options.head_count, options.rank, task.n, float(task.sigma),
                     np.asarray(getattr(task, "sigma_x"), float),  # noqa: B009
                     np.asarray(getattr(task, "sigma_w"), float),  # noqa: B009
                     bool(options.normalise))
    return task, loss


def initial_model(config: TrainConfig) -> Any:
    """The run's freshly initialised model, drawn exactly as the trainer draws it."""
    return config.model_class().create(config.task.d, config.model,
                                       make_generator(config.run.seed, "init"), torch.float32)


def logged_steps(config: TrainConfig) -> list[int]:
    every, steps = config.run.log_every, config.optim.steps
    return sorted({*range(every, steps + 1, every), steps})


def _evaluated(model: Any, task: TaskFamily, prompts: int, seed: int, step: int) -> float:
    """The mean squared error of ``model`` on ``prompts`` fresh prompts (seeded)."""
    batch = task.sample_prompts(prompts, make_generator(seed, "dynamics-eval", step))
    with torch.no_grad():
        error = model(batch.X, batch.y, batch.x_q).double() - batch.y_q.double()
    return float(error.square().mean())


def _exact_loss(loss: HeadsLoss, model: Any, step: int, replicate: int, lr: float) -> float:
    """The exact loss of the SGD iterate, or ConfigError (one line) if SGD has diverged."""
    with np.errstate(all="ignore"):
        theta = loss.join(*model.raw_parameters())
        finite = bool(np.all(np.isfinite(theta)) and np.all(np.isfinite(loss.gamma(theta))))
        value = loss.loss(theta) if finite else math.inf
    if not math.isfinite(value):
        raise ConfigError(f"SGD diverged by step {step} (replicate {replicate}: loss not "
                          f"finite); lower --lr, now {lr:g}")
    return value


def sgd_curves(config: TrainConfig, task: TaskFamily, loss: HeadsLoss, replicates: int,
               progress: bool) -> tuple[np.ndarray, np.ndarray]:
    """(evaluated, exact), each (replicates, logged steps): each SGD replicate's iterate's
    loss on fresh prompts and its exact population loss."""
    steps = logged_steps(config)
    out = np.empty((replicates, len(steps)))
    evaluated = np.empty_like(out)
    bar = tqdm(total=replicates * config.optim.steps, disable=not progress, unit="step",
               desc="sgd", dynamic_ncols=True, mininterval=0.5)
    with intra_op_threads(1):
        for r in range(replicates):
            model = initial_model(config)
            model.prepare_for_task(task)
            seed = config.run.seed + r
            objective = make_objective(task, model, config.resolved_sampler(task),
                                       config.optim.batch, seed, torch.device("cpu"))
            optimizer = make_optimizer(model, config, task)
            train_step = make_train_step(config, optimizer, objective, model.gradient_masks())
            column = 0
            for step in range(config.optim.steps):
                train_step(step)
                if step + 1 == steps[column]:
                    out[r, column] = _exact_loss(loss, model, step + 1, r, config.optim.lr)
                    evaluated[r, column] = _evaluated(model, task, config.run.eval_prompts,
                                                      seed, step + 1)
                    column += 1
                bar.update(1)
            if not (np.all(np.isfinite(out[r])) and np.all(np.isfinite(evaluated[r]))):
                raise ConfigError(f"SGD diverged (replicate {r}: loss not finite); lower "
                                  f"--lr, now {config.optim.lr:g}")
    bar.close()
    return evaluated, out


def _mean_and_stderr(values: np.ndarray | None) -> tuple[Any, Any]:
    if values is None:
        return None, None
    return values.mean(0).tolist(), (values.std(0, ddof=1) / math.sqrt(len(values))).tolist()


def flow_drop_time(curve: FlowCurve) -> float:
    """The first time the flow has made half its drop, (L(0) + L(end)) / 2, interpolated in
    ln t on the dense grid."""
    target = (curve.grid_losses[0] + curve.final_loss) / 2
    below = int(np.argmax(curve.grid_losses <= target))
    if below == 0:
        return float(curve.grid[0])
    t0, t1 = np.log(curve.grid[below - 1]), np.log(curve.grid[below])
    l0, l1 = curve.grid_losses[below - 1], curve.grid_losses[below]
    return float(np.exp(t0 + (t1 - t0) * (l0 - target) / (l0 - l1)))


def _flow_summary(config: TrainConfig, loss: HeadsLoss, theta0: np.ndarray,
                  curve: FlowCurve) -> dict[str, Any]:
    task = config.task
    levels = rank_k_losses(task.n, float(task.sigma), loss.sigma_x, loss.sigma_w)
    plateaus = find_plateaus(curve.grid, curve.grid_losses, levels)
    return {
        "plateaus": [plateau.to_json() for plateau in plateaus],
        "rank_k_losses": levels.tolist(), "loss_star": float(levels[-1]),
        "flow_final_time": curve.final_time, "flow_final_loss": curve.final_loss,
        "flow_converged": curve.converged, "flow_stop": curve.stop,
        "flow_target": curve.target, "flow_gap": curve.gap,
        "flow_converged_gap": CONVERGED_GAP, "flow_error": curve.error,
        "flow_steps": curve.steps, "flow_grid": curve.grid.tolist(),
        "flow_grid_loss": curve.grid_losses.tolist(),
        "drop_time_flow": flow_drop_time(curve),
        "drop_time_analytic": merged_drop_time(loss, theta0),
    }


def _flow(loss: HeadsLoss, theta0: np.ndarray, times: np.ndarray,
          progress: bool) -> FlowCurve:
    """The flow at ``times``, its cost checked first (``check_flow_cost``); the bar names
    the estimate."""
    estimate = check_flow_cost(loss, float(times[-1]), times.size)
    bar = tqdm(total=1000, disable=not progress, dynamic_ncols=True, mininterval=0.5,
               desc=f"flow (about {estimate:.2g} steps to the last logged time)",
               unit="‰ of ln t")
    start, end = [float(times[0]) / 100], float(times[-1])

    def update(t: float) -> None:
        done = min(1000, int(1000 * math.log(max(t / start[0], 1.0))
                             / max(math.log(end / start[0]), 1e-12)))
        bar.update(max(done - bar.n, 0))

    try:
        return flow_curve(loss, theta0, times, progress=update)
    finally:
        bar.close()


def check_replicates(replicates: int) -> None:
    if isinstance(replicates, bool) or not isinstance(replicates, int) \
            or not 2 <= replicates <= MAX_REPLICATES:
        raise ConfigError(f"--replicates must be an integer from 2 to {MAX_REPLICATES}, got "
                          f"{replicates!r}")


def run_dynamics(config: TrainConfig, out: str | Path, flow_only: bool = False,
                 replicates: int = DEFAULT_REPLICATES, progress: bool = True) -> dict[str, Any]:
    """SGD (unless ``flow_only``) and the exact flow for ``config``; writes dynamics.json,
    .csv and .png in ``out`` (all or none); returns dynamics.json's content."""
    check_replicates(replicates)
    out_dir = check_out_dir(out)
    task, loss = check_dynamics_config(config)
    check_landings(config.optim.steps // config.run.log_every + 1)
    theta0 = loss.join(*initial_model(config).raw_parameters())
    steps = logged_steps(config)
    times = np.array(elapsed_times(config.optim, steps))
    check_flow_cost(loss, float(times[-1]), times.size)
    evaluated, exact = (None, None) if flow_only else sgd_curves(config, task, loss,
                                                                 replicates, progress)
    curve = _flow(loss, theta0, times, progress)
    data: dict[str, Any] = {
        "times": times.tolist(), "steps": steps, "flow_loss": curve.losses.tolist(),
        **dict(zip(("sgd_loss", "sgd_loss_stderr"), _mean_and_stderr(evaluated),
                   strict=True)),
        **dict(zip(("sgd_exact_loss", "sgd_exact_loss_stderr"), _mean_and_stderr(exact),
                   strict=True)),
        "replicates": None if flow_only else replicates,
        "eval_prompts": None if flow_only else config.run.eval_prompts,
        "measured": None if flow_only else "SGD iterates' loss on fresh prompts, "
                                           "replicate mean",
        **_flow_summary(config, loss, theta0, curve), "config": config.to_json(),
    }
    write_dynamics(out_dir, data)
    return data


def run_dir_dynamics(run_dir: str | Path, out: str | Path | None = None,
                     progress: bool = True) -> dict[str, Any]:
    """The flow beside a finished SGD run's metrics (window means of batch losses, each
    compared with the flow's mean over the same steps); writes in ``out`` (default
    RUN_DIR/dynamics). The metrics are checked line by line against the run's config
    (``read_sgd_metrics``) before any work."""
    config, _ = read_finished_run(Path(run_dir))
    _, loss = check_dynamics_config(config)
    out_dir = check_out_dir(out if out is not None else Path(run_dir) / "dynamics")
    check_landings(config.optim.steps)
    every = elapsed_times(config.optim, range(config.optim.steps + 1))
    if not every[-1] > 0:
        raise ConfigError(f"{run_dir}: its time axis ends at t = {every[-1]!r}; the flow "
                          f"needs t > 0")
    records = read_sgd_metrics(RunFolder(Path(run_dir)).metrics, config, every)
    theta0 = loss.join(*initial_model(config).raw_parameters())
    times = np.array(sorted(set(every[1:])))
    if times.size != len(every) - 1:
        raise ConfigError(f"{run_dir}: its steps do not all advance the time (a zero "
                          f"learning rate); the flow needs increasing times")
    curve = _flow(loss, theta0, times, progress)
    at_steps = np.concatenate([[loss.loss(theta0)], curve.losses])
    flow, previous = [], 0
    for record in records:
        flow.append(float(at_steps[previous:record["step"]].mean()))
        previous = record["step"]
    data: dict[str, Any] = {
        "times": [record["time"] for record in records],
        "steps": [record["step"] for record in records], "flow_loss": flow,
        "sgd_loss": [record["loss"] for record in records],
        "sgd_loss_stderr": [record.get("loss_stderr") for record in records],
        "replicates": 1, "measured": "window mean of batch losses (metrics)",
        **_flow_summary(config, loss, theta0, curve), "config": config.to_json(),
        "run": str(run_dir),
    }
    write_dynamics(out_dir, data)
    return data
