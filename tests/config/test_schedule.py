"""elapsed_times: the time at chosen steps in one pass, bit-identical to elapsed_time."""

from __future__ import annotations

import math

import pytest

from iclab.config.schedule import elapsed_time, elapsed_times
from iclab.config.sections import OptimConfig


@pytest.mark.parametrize("optim", [
    OptimConfig(lr=0.1, steps=50, lr_schedule="constant"),
    OptimConfig(lr=0.1, steps=50, lr_schedule="cosine", warmup=7),
])
def test_times_at_chosen_steps_equal_elapsed_time(optim: OptimConfig) -> None:
    at = [0, 1, 7, 8, 30, 50]
    assert elapsed_times(optim, at) == [elapsed_time(optim, s) for s in at]


def test_the_cosine_time_is_half_the_constant_one_over_the_whole_run() -> None:
    """sum_s lr (1 + cos(pi s / T)) / 2 over s < T is lr (T + 1) / 2 (the cosines cancel in
    pairs but for s = 0)."""
    steps = 40
    total = elapsed_times(OptimConfig(lr=0.3, steps=steps, lr_schedule="cosine"), [steps])[0]
    assert math.isclose(total, 0.3 * (steps + 1) / 2, rel_tol=1e-12)
