"""The trainer: fits a model to a family's objective, with progress, metrics and checkpoints.

It writes, in the run folder it is given (``iclab.training.run_folder``), the metrics log as it
goes, a checkpoint every ``checkpoint_every`` steps, the kept checkpoints of ``--checkpoints``
(``iclab.training.snapshots``) and the trained model at the end; nothing else. Judging the
trained model (test loss, read-out, the optimum, result.json) is ``iclab.runs``' job. Running
again on the same folder resumes from the checkpoint and ends bit-identical (on the CPU) to an
uninterrupted run.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from iclab.config.schedule import checkpoint_steps, constant_rate
from iclab.config.train import TrainConfig
from iclab.models.base import Model, progress_metrics
from iclab.tasks.base import TaskFamily
from iclab.training.checkpoint import (
    RESTART_HINT,
    load_checkpoint,
    save_checkpoint,
)
from iclab.training.exact import Masks, Optimiser, make_optimizer, take_step
from iclab.training.objective import Objective, make_objective
from iclab.training.run_folder import RunFolder
from iclab.training.snapshots import write_snapshot
from iclab.utils.errors import ConfigError, Error
from iclab.utils.io import atomic_write_text
from iclab.utils.seeding import make_generator
from iclab.utils.threads import intra_op_threads

TRAIN_THREADS = 1
"""Intra-op threads while training: a step's tensors (B x (2d+3) with the statistics sampler)
are too small to split, and on a busy 2-core machine torch's default of one thread per core
makes every parallel region wait for a descheduled thread (benchmarks/README.md)."""

DIVERGENCE_FACTOR = 1e4
"""A logging window whose median batch loss is this many times the first step's loss (the
untrained model's) is divergence. The median, not the mean: a deep model's prediction is a
polynomial of degree 2L+1 in the prompt, so a rare prompt can make one batch's loss 1e9 while
the model trains on (benchmarks/README.md, the depth study)."""


MetricsHook = Callable[[dict[str, Any]], None]
"""Called with each metrics line (a dict: step, loss, ...) after it is written."""


class TrainingDivergedError(Error, RuntimeError):
    """The loss became non-finite or exploded; the run stops without a result."""


@dataclass
class TrainedModel:
    """A fitted model (on its training device), the sampler used, the training time and the
    checksum of the weights written (``tensor_digest``)."""

    model: Model
    sampler: str
    seconds: float
    checksum: str = ""


def resolve_device(name: str) -> torch.device:
    """torch.device for "cpu", "cuda" or "auto" (cuda where available, else cpu), refusing
    cuda where it is not available."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device cuda was asked for but CUDA is not available here; use cpu")
    return torch.device(name)


def _to_host(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The tensors on the CPU, contiguous; from a GPU through pinned buffers with non-blocking
    copies and one synchronisation at the end."""
    on_gpu = [t for t in tensors.values() if t.device.type == "cuda"]
    if not on_gpu:
        return {name: t.detach().contiguous() for name, t in tensors.items()}
    out = {}
    for name, t in tensors.items():
        host = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
        out[name] = host.copy_(t.detach(), non_blocking=True)
    torch.cuda.synchronize()
    return out


def build_model(
    config: TrainConfig, task: TaskFamily, device: torch.device
) -> tuple[Model, Optimiser]:
    """The freshly initialised model of ``config`` (float64 when exact), prepared for
    ``task``, and its optimiser: fused Adam, or L-BFGS on the exact loss."""
    dtype = torch.float64 if config.optim.exact else torch.float32
    model_class = config.model_class()
    model = model_class.create(config.task.d, config.model, make_generator(config.run.seed,
                                                                           "init"), dtype)
    model = model.to(device)
    model.prepare_for_task(task)
    return model, make_optimizer(model, config, task)


def make_train_step(
    config: TrainConfig, optimizer: Optimiser, objective: Objective, masks: Masks = ()
) -> Callable[[int], torch.Tensor]:
    """One optimisation step: step -> the (detached) loss of that step's batch.

    Sets the scheduled learning rate, draws the step's batch, backpropagates, masks the
    gradients (``Model.gradient_masks``) and updates.
    ``fit`` and ``benchmarks/train_speed.py`` both run exactly this.
    """

    def train_step(step: int) -> torch.Tensor:
        for group in optimizer.param_groups:
            group["lr"] = config.learning_rate(step)
        return take_step(optimizer, objective, step, config.optim.clip_grad, masks)

    return train_step


def _restore_metrics(path: Path, completed: int) -> None:
    """Keep only the metric lines of steps already completed (drop any written after them)."""
    if not path.exists():
        return
    kept = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            if json.loads(line)["step"] <= completed:
                kept.append(line)
        except (ValueError, KeyError, TypeError):
            break  # a torn last line from a killed run
    atomic_write_text(path, "".join(f"{line}\n" for line in kept))


def fit(config: TrainConfig, task: TaskFamily, out_dir: Path,
        progress: bool = True, on_record: MetricsHook | None = None) -> TrainedModel:
    """Train (or resume) ``config``'s model on ``task`` in ``out_dir``; see the module doc.

    Runs with ``TRAIN_THREADS`` intra-op threads. ``on_record``, if given, is called with each
    metrics line as it is written (experiment tracking, ``iclab.tracking``).
    """
    with intra_op_threads(TRAIN_THREADS):
        return _fit(config, task, Path(out_dir), progress, on_record)


def _diverged(median: float, reference: float | None) -> bool:
    """Whether a logging window's median batch loss shows divergence: non-finite, or above
    ``DIVERGENCE_FACTOR`` times ``reference``."""
    if not math.isfinite(median):
        return True
    return reference is not None and median > DIVERGENCE_FACTOR * max(reference, 1e-12)


def _time(config: TrainConfig, done: int, running: float) -> float:
    """The flow time after ``done`` steps: exactly lr x done with a constant schedule, else the
    running sum of the learning rates."""
    return config.elapsed_time(done) if constant_rate(config.optim) else running


def _fit(config: TrainConfig, task: TaskFamily, out_dir: Path, progress: bool,
         on_record: MetricsHook | None) -> TrainedModel:
    started = time.perf_counter()
    folder = RunFolder(out_dir)
    device = resolve_device(config.run.device)
    model, optimizer = build_model(config, task, device)
    config_hash = config.hash()
    completed = 0
    if (folder.checkpoint).exists():
        completed = load_checkpoint(folder.checkpoint, model, optimizer, config_hash)
        if completed > config.optim.steps:
            raise ConfigError(f"{folder.checkpoint}: records {completed} steps, more than "
                              f"the run's {config.optim.steps}; {RESTART_HINT}")
    _restore_metrics(folder.metrics, completed)
    kept = set(checkpoint_steps(config.optim.steps, config.run.checkpoints))
    config_json = config.to_json()
    if completed == 0 and 0 in kept:
        write_snapshot(out_dir, 0, _to_host(model.state_dict()), config_json)
    sampler = config.resolved_sampler(task)
    objective = make_objective(task, model, sampler, config.optim.batch, config.run.seed, device,
                               config.optim.pretrain_prompts, config.curriculum())
    train_step = make_train_step(config, optimizer, objective, model.gradient_masks())
    steps, log_every = config.optim.steps, config.run.log_every
    bar = tqdm(total=steps, initial=completed, disable=not progress, unit="step",
               desc="train", dynamic_ncols=True, mininterval=0.5)
    dtype = next(model.parameters()).dtype
    running = torch.zeros((), dtype=dtype, device=device)
    window: list[torch.Tensor] = []
    first_loss: float | None = None
    sgd = config.optim.optimizer == "sgd"
    elapsed = config.elapsed_time(completed) if sgd else 0.0
    with open(folder.metrics, "a") as metrics:
        for step in range(completed, steps):
            loss = train_step(step)
            if sgd:
                elapsed += config.learning_rate(step)
            if first_loss is None and step == 0:
                first_loss = float(loss)
            running += loss
            window.append(loss)
            done = step + 1
            if done % log_every == 0 or done == steps:
                count = done - max(completed, (done - 1) // log_every * log_every)
                mean_loss = float(running) / count
                running.zero_()
                stacked = torch.stack(window)
                median = float(stacked.median())
                spread = (float(stacked.double().std()) / math.sqrt(len(window))
                          if sgd and len(window) > 1 else None)
                window.clear()
                if _diverged(median, first_loss):
                    bar.close()
                    raise TrainingDivergedError(
                        f"training diverged at step {done}: median batch loss {median:.3g}"
                        + (f" (first step: {first_loss:.3g})" if first_loss else "")
                        + f"; no result is written: try a smaller --lr (now "
                        f"{config.optim.lr:g}) with --restart or another --out")
                record = {"step": done, "loss": mean_loss, "lr": config.learning_rate(step),
                          **({"time": _time(config, done, elapsed), "loss_stderr": spread}
                             if sgd else {}),
                          **progress_metrics(model, task.n)}
                metrics.write(json.dumps(record) + "\n")
                metrics.flush()
                if on_record is not None:
                    on_record(record)
                bar.set_postfix(loss=f"{mean_loss:.4f}")
            if done in kept and done < steps:
                write_snapshot(out_dir, done, _to_host(model.state_dict()), config_json)
            if done % config.run.checkpoint_every == 0 and done < steps:
                save_checkpoint(folder.checkpoint, model, optimizer, done, config.run.seed,
                                config_hash)
            bar.update(1)
    bar.close()
    if not all(torch.isfinite(p).all() for p in model.parameters()):
        raise TrainingDivergedError("training ended with non-finite weights; no result is "
                                    "written: try a smaller --lr with --restart")
    state = _to_host(model.state_dict())
    checksum = folder.write_model(state, config_json)
    if kept:
        write_snapshot(out_dir, steps, state, config_json)
    save_checkpoint(folder.checkpoint, model, optimizer, steps, config.run.seed, config_hash)
    return TrainedModel(model, sampler, time.perf_counter() - started, checksum)
