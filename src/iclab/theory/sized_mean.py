"""A Monte Carlo mean drawn until its standard error reaches a stated target.

A claim that compares a measurement with a simulated theory number states how precisely the
number is known. Drawing a fixed count either wastes draws (the target was met long before) or
leaves the number less precise than the claim needs (the count was too small for this site).
``mean_to_stderr`` draws in numbered blocks until the standard error of the mean is at most
the target, within an upper bound on the blocks that is fixed before any draw.

Block ``k``'s values are a pure function of ``k`` (the caller draws them from a generator
seeded by ``k``), so two sizings of the same seed share their first blocks: Monte Carlo
estimates of neighbouring laws stay on common random numbers wherever both drew, and a run
is bit-reproducible from its seed and target.

The rule: after ``first`` blocks, and after every round, the sample standard deviation s of
the values drawn so far gives the count the target needs, (s / target)^2; the next round
draws half of what is missing to that count (at least one block, at most ``most`` blocks in
all), so that a count estimated from few values is not overshot. It stops when the standard
error s / sqrt(count) is at most the target or ``most`` blocks are drawn (``reached`` false
then). ``means_to_stderr`` draws several means together until each reaches its target.
Stopping on an estimated standard error biases the mean by a fraction of a standard error at
most; the claims' tolerances are several standard errors.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from iclab.utils.errors import ConfigError


@dataclass(frozen=True)
class SizedMean:
    """mean and standard error of ``draws`` values; ``target``: the standard error asked for
    (absolute); ``reached``: whether the standard error is at most it."""

    mean: float
    stderr: float
    draws: int
    target: float
    reached: bool


def mean_to_stderr(draw_block: Callable[[int], np.ndarray], target: float | None = None,
                   relative: float | None = None, first: int = 2,
                   most: int = 1000) -> SizedMean:
    """The mean of the values of blocks 0, 1, ... (``draw_block(k)``: block k's values, (B,)
    float64, the same for the same k), drawn until the standard error of the mean is at most
    ``target`` (absolute) or ``relative`` x |mean| (exactly one of the two, > 0), at least
    ``first`` and at most ``most`` blocks.

    A mean whose values are all equal (a standard deviation of 0, such as a risk that is 0 for
    every draw) stops after ``first`` blocks with standard error 0."""
    (sized,) = means_to_stderr(lambda block: np.reshape(draw_block(block), (-1, 1)), target,
                               relative, first, most)
    return sized


def means_to_stderr(draw_block: Callable[[int], np.ndarray], target: float | None = None,
                    relative: float | None = None, first: int = 2,
                    most: int = 1000) -> list[SizedMean]:
    """``mean_to_stderr`` for m means drawn together: ``draw_block(k)`` gives (B, m) values,
    and the blocks go on until every column's standard error is at most its target."""
    if (target is None) == (relative is None):
        raise ConfigError("give exactly one of target and relative")
    goal = target if target is not None else relative
    if goal is None or not (isinstance(goal, int | float) and math.isfinite(goal) and goal > 0):
        raise ConfigError(f"the standard error asked for must be a finite number > 0, got "
                          f"{goal!r}")
    if not 1 <= first <= most:
        raise ConfigError(f"blocks: need 1 <= first <= most, got first={first}, most={most}")
    drawn: list[np.ndarray] = []
    wanted = first
    while True:
        while len(drawn) < wanted:
            block = np.asarray(draw_block(len(drawn)), dtype=np.float64)
            drawn.append(block.reshape(block.shape[0], -1))
        values = np.concatenate(drawn)
        count, blocks = values.shape[0], len(drawn)
        if count < 2:
            raise ConfigError(f"a standard error needs at least 2 values, the first {blocks} "
                              f"block(s) gave {count}")
        means, deviations = values.mean(axis=0), values.std(axis=0, ddof=1)
        asked = (np.full_like(means, float(target)) if target is not None
                 else float(relative or 0.0) * np.abs(means))
        stderrs = deviations / math.sqrt(count)
        reached = stderrs <= asked
        if reached.all() or blocks >= most:
            return [SizedMean(float(m), float(e), count, float(a), bool(r))
                    for m, e, a, r in zip(means, stderrs, asked, reached, strict=True)]
        with np.errstate(divide="ignore"):
            needed = float(np.max(np.where(asked > 0, (deviations / asked) ** 2, np.inf)))
        per_block = count / blocks
        if not math.isfinite(needed):
            wanted = most
        else:  # half way to the estimated need: the estimate improves as it is approached
            wanted = min(most, blocks + max(1, math.ceil((needed / per_block - blocks) / 2)))
