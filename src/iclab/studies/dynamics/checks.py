"""What ``iclab dynamics`` checks before any work: that every option it records is one it
honours (``check_honoured``), and that a run folder's metrics.jsonl is the run's own log
(``read_sgd_metrics``: every line's shape, types, finite values, increasing steps, and the
time axis of the run's config)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from iclab.config.sections import OptimConfig
from iclab.config.train import TrainConfig
from iclab.utils.errors import ConfigError

UNHONOURED = ("clip_grad", "pretrain_prompts", "curriculum_every", "curriculum_d_start",
              "curriculum_n_start", "curriculum_d_increment", "curriculum_n_increment",
              "exact")
"""Optimiser settings the flow has no counterpart for: plain SGD on fresh prompts only."""
TIME_MATCH = 1e-9
"""A metrics line's time must equal the config's time at its step to this (relative)."""


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_honoured(config: TrainConfig) -> None:
    """ConfigError (one line naming the option) where ``config`` sets an optimiser option the
    flow comparison does not honour (``UNHONOURED``, away from its default)."""
    default = OptimConfig(lr=1.0)
    for name in UNHONOURED:
        value = getattr(config.optim, name)
        if value != getattr(default, name):
            raise ConfigError(f"iclab dynamics compares plain SGD on fresh prompts with the "
                              f"flow and does not honour {_option(name)} (got {value!r}); "
                              f"leave it out")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and math.isfinite(value)


def _checked(record: Any, where: str, previous: int, config: TrainConfig,
             times: list[float]) -> int:
    if not isinstance(record, dict):
        raise ConfigError(f"{where}: not a JSON object")
    step = record.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or not previous < step \
            <= config.optim.steps:
        raise ConfigError(f"{where}: step must be an integer above the previous line's "
                          f"({previous}) and at most the run's {config.optim.steps}; got "
                          f"{step!r}")
    for key in ("time", "loss"):
        if not _number(record.get(key)) or record[key] < 0:
            raise ConfigError(f"{where}: {key} must be a finite number >= 0 (an SGD run logs "
                              f"it); got {record.get(key)!r}")
    stderr = record.get("loss_stderr")
    if stderr is not None and (not _number(stderr) or stderr < 0):
        raise ConfigError(f"{where}: loss_stderr must be a finite number >= 0 or absent; got "
                          f"{stderr!r}")
    expected = times[step]
    if abs(record["time"] - expected) > TIME_MATCH * max(abs(expected), 1e-300):
        raise ConfigError(f"{where}: time {record['time']!r} is not the run's time at step "
                          f"{step} ({expected!r}); the metrics are not this run's")
    return step


def read_sgd_metrics(path: Path, config: TrainConfig, times: list[float]
                     ) -> list[dict[str, Any]]:
    """The run's metrics lines, each checked (module doc); ``times[s]`` is the config's time
    after s steps. ConfigError (one line naming the file and line) otherwise."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read it ({type(error).__name__})") from None
    records, previous = [], 0
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        try:
            record = json.loads(line, parse_constant=lambda name: math.nan)
        except ValueError:
            raise ConfigError(f"{where}: not JSON") from None
        previous = _checked(record, where, previous, config, times)
        records.append(record)
    if not records:
        raise ConfigError(f"{path}: no metrics lines")
    return records
