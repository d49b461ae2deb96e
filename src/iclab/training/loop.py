"""The training loop: Adam on fresh batches, progress bar, metrics log, resumable checkpoints.

A run in ``out_dir`` writes config.json first, metrics.jsonl as it goes, checkpoint.safetensors
every ``checkpoint_every`` steps, then model.safetensors and, atomically and last, result.json.
Running again on the same folder resumes from the checkpoint and ends bit-identical (on the
CPU) to an uninterrupted run; a folder with result.json is already finished and is not re-run.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from tqdm import tqdm

from iclab.analysis.evaluate import evaluate
from iclab.analysis.readout import read_algorithm
from iclab.errors import ConfigError
from iclab.io import atomic_write, atomic_write_json, atomic_write_text, read_json
from iclab.models.lsa import LinearSelfAttention
from iclab.seeding import make_generator
from iclab.training.checkpoint import load_checkpoint, save_checkpoint
from iclab.training.config import TrainConfig
from iclab.training.exact import Optimiser, make_optimizer, take_step
from iclab.training.objective import Objective, make_objective

CONFIG, METRICS, CHECKPOINT, MODEL, RESULT = (
    "config.json", "metrics.jsonl", "checkpoint.safetensors", "model.safetensors", "result.json",
)


TRAIN_THREADS = 1
"""Intra-op threads while training: a step's tensors (B x (2d+3) with the statistics sampler)
are too small to split, and on a busy 2-core machine torch's default of one thread per core
makes every parallel region wait for a descheduled thread (benchmarks/README.md)."""


class TrainingDivergedError(RuntimeError):
    """The loss became NaN or infinite; the run stops without a result."""


@contextmanager
def intra_op_threads(count: int) -> Iterator[None]:
    """Run the block with ``count`` intra-op threads, restoring the previous number after."""
    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def build_model(
    config: TrainConfig, device: torch.device
) -> tuple[LinearSelfAttention, Optimiser]:
    """The freshly initialised model of ``config`` (float64 when exact) and its optimiser:
    fused Adam, or L-BFGS on the exact loss (``iclab.training.exact``)."""
    dtype = torch.float64 if config.exact else torch.float32
    model = LinearSelfAttention(
        config.model_options(), make_generator(config.seed, "init"), config.init_scale, dtype,
        config.init,
    ).to(device)
    return model, make_optimizer(model, config)


def make_train_step(
    config: TrainConfig, optimizer: Optimiser, objective: Objective
) -> Callable[[int], torch.Tensor]:
    """One optimisation step: step -> the (detached) loss of that step's batch.

    Sets the scheduled learning rate, draws the step's batch, backpropagates and updates.
    ``train`` and ``benchmarks/train_speed.py`` both run exactly this.
    """

    def train_step(step: int) -> torch.Tensor:
        for group in optimizer.param_groups:
            group["lr"] = config.learning_rate(step)
        return take_step(optimizer, objective, step)

    return train_step


def resolve_device(name: str) -> torch.device:
    """torch.device for "cpu" or "cuda", refusing cuda where it is not available."""
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device cuda was asked for but CUDA is not available here; use cpu")
    return torch.device(name)


def prepare_run_dir(config: TrainConfig, out_dir: Path) -> bool:
    """Create ``out_dir`` with config.json, or check it holds this config. True if finished."""
    config_path = out_dir / CONFIG
    if config_path.exists():
        existing = read_json(config_path)
        if existing != config.to_json():
            raise ConfigError(
                f"{out_dir} holds a run with a different config; use another --out or remove it"
            )
        return (out_dir / RESULT).exists()
    if out_dir.exists() and any(out_dir.iterdir()):
        raise ConfigError(f"{out_dir} exists, is not empty and holds no iclab config.json")
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(config_path, config.to_json())
    return False


def _restore_metrics(path: Path, completed: int) -> None:
    """Keep only the metric lines of steps already completed (drop any written after them)."""
    if not path.exists():
        return
    kept = []
    for line in path.read_text().splitlines():
        try:
            if json.loads(line)["step"] <= completed:
                kept.append(line)
        except (ValueError, KeyError):
            break  # a torn last line from a killed run
    atomic_write_text(path, "".join(f"{line}\n" for line in kept))


def train(config: TrainConfig, out_dir: Path, progress: bool = True) -> dict[str, Any]:
    """Train (or resume, or skip if finished) the run of ``config`` in ``out_dir``.

    Returns the result dictionary written to result.json. Runs with ``TRAIN_THREADS``
    intra-op threads.
    """
    with intra_op_threads(TRAIN_THREADS):
        return _train(config, out_dir, progress)


def _train(config: TrainConfig, out_dir: Path, progress: bool) -> dict[str, Any]:
    config.validate()
    device = resolve_device(config.device)
    out_dir = Path(out_dir)
    if prepare_run_dir(config, out_dir):
        result: dict[str, Any] = read_json(out_dir / RESULT)
        return result
    started = time.perf_counter()
    task = config.task()
    model, optimizer = build_model(config, device)
    completed = 0
    if (out_dir / CHECKPOINT).exists():
        completed = load_checkpoint(out_dir / CHECKPOINT, model, optimizer)
    _restore_metrics(out_dir / METRICS, completed)
    objective = make_objective(
        task, model, config.resolved_sampler, config.batch, config.seed, device
    )
    train_step = make_train_step(config, optimizer, objective)
    bar = tqdm(total=config.steps, initial=completed, disable=not progress, unit="step",
               desc="train", dynamic_ncols=True, mininterval=0.5)
    running = torch.zeros((), dtype=model.W_K.dtype, device=device)  # float64 when exact
    with open(out_dir / METRICS, "a") as metrics:
        for step in range(completed, config.steps):
            running += train_step(step)
            done = step + 1
            if done % config.log_every == 0 or done == config.steps:
                count = done - max(completed, (done - 1) // config.log_every * config.log_every)
                mean_loss = float(running) / count
                running.zero_()
                if not math.isfinite(mean_loss):
                    bar.close()
                    raise TrainingDivergedError(
                        f"training diverged at step {done}: loss is {mean_loss}; "
                        f"try a smaller --lr (now {config.lr})"
                    )
                learned = read_algorithm(model, config.n)
                record = {"step": done, "loss": mean_loss, "lr": config.learning_rate(step),
                          "eta_hat": learned.eta_hat, "isotropy_err": learned.isotropy_err}
                metrics.write(json.dumps(record) + "\n")
                metrics.flush()
                bar.set_postfix(loss=f"{mean_loss:.4f}", eta_hat=f"{learned.eta_hat:.5f}")
            if done % config.checkpoint_every == 0 and done < config.steps:
                save_checkpoint(out_dir / CHECKPOINT, model, optimizer, done, config.seed)
            bar.update(1)
    bar.close()
    if not all(torch.isfinite(p).all() for p in model.parameters()):
        raise TrainingDivergedError("training ended with non-finite weights; try a smaller --lr")
    state = {name: t.detach().cpu().contiguous() for name, t in model.state_dict().items()}
    atomic_write(out_dir / MODEL, lambda tmp: save_file(
        state, str(tmp), metadata={"config": json.dumps(config.to_json())}))
    save_checkpoint(out_dir / CHECKPOINT, model, optimizer, config.steps, config.seed)
    result = evaluate(model, task, config.eval_prompts, config.seed)
    result["wall_seconds"] = time.perf_counter() - started
    result["sampler"] = config.resolved_sampler
    atomic_write_json(out_dir / RESULT, result)
    return result
