"""The optimiser's schedule: the learning rate at each step and the gradient-flow time it has
covered (the time axis of plain SGD runs, docs/guide/dynamics.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from iclab.config.sections import OptimConfig


def learning_rate(optim: OptimConfig, step: int) -> float:
    """The learning rate at ``step`` (0-based): the schedule's, times (step + 1) / warmup
    during the first ``warmup`` steps; 1, L-BFGS's first trial step, if exact."""
    if optim.exact:
        return 1.0
    rate = optim.lr if optim.lr_schedule == "constant" else \
        optim.lr * 0.5 * (1.0 + math.cos(math.pi * step / optim.steps))
    return rate * min(1.0, (step + 1) / optim.warmup) if optim.warmup else rate


def constant_rate(optim: OptimConfig) -> bool:
    """Whether every step has the same learning rate, lr (a constant schedule, no warm-up)."""
    return optim.lr_schedule == "constant" and not optim.warmup and not optim.exact


def elapsed_time(optim: OptimConfig, steps: int) -> float:
    """The gradient-flow time after ``steps`` steps: the sum of their learning rates (lr x
    steps with a constant schedule). Otherwise summed in step order, as the trainer sums it,
    so a resumed run logs the same bits."""
    if constant_rate(optim):
        return optim.lr * steps
    total = 0.0
    for step in range(steps):
        total += learning_rate(optim, step)
    return total



def elapsed_times(optim: OptimConfig, at: Sequence[int]) -> list[float]:
    """``elapsed_time(optim, s)`` for each s of ``at`` (increasing), in one pass over the
    steps (the same bits), keeping only those."""
    if constant_rate(optim):
        return [optim.lr * step for step in at]
    times, total, done = [], 0.0, 0
    for target in at:
        while done < target:
            total += learning_rate(optim, done)
            done += 1
        times.append(total)
    return times


def checkpoint_steps(steps: int, checkpoints: int | None) -> tuple[int, ...]:
    """The steps after which ``iclab train --checkpoints K`` keeps the model: K distinct steps
    on a log scale, 0 (the initial model) and round(T^(i/K)) for i = 1..K-1, each raised to
    one past the one before where rounding makes two equal (and kept below T), then T itself
    (the last); () without checkpoints. Needs 1 <= K <= T (``config.checks``)."""
    if checkpoints is None:
        return ()
    kept = [0]
    for i in range(1, checkpoints):
        target = max(kept[-1] + 1, round(steps ** (i / checkpoints)))
        kept.append(min(target, steps - (checkpoints - i)))
    return (*kept, steps)
