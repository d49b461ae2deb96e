"""Weights & Biases: a run of the project "iclab" in RUN/wandb, offline unless the user is
logged in (WANDB_API_KEY, or a netrc entry for the W&B host) or WANDB_MODE says otherwise;
no account is needed (``wandb sync RUN/wandb/offline-run-*`` uploads an offline run later)."""

from __future__ import annotations

import netrc
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

from iclab.utils.errors import ConfigError

Mode = Literal["online", "offline", "disabled", "shared"]
MODES: tuple[Mode, ...] = ("online", "offline", "disabled", "shared")
"""The modes wandb.init takes (WANDB_MODE)."""

PROJECT = "iclab"
"""The W&B project every run is logged under (WANDB_PROJECT overrides it)."""


def logged_in() -> bool:
    """Whether W&B has credentials here: WANDB_API_KEY, or a netrc entry for its host."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    host = urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")).hostname
    try:
        return host is not None and netrc.netrc().authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False


def mode() -> Mode:
    """WANDB_MODE if set (one of ``MODES``), else "online" when logged in and "offline"
    otherwise."""
    given = os.environ.get("WANDB_MODE")
    for known in MODES:
        if given == known:
            return known
    if given:
        raise ConfigError(f"WANDB_MODE must be one of {', '.join(MODES)}, got {given!r}")
    return "online" if logged_in() else "offline"


class WandbTracker:
    """The config as the run's config, metrics per step (train/...), the result's numbers and
    the verdict in the run's summary, the figures as images."""

    def __init__(self, run_dir: Path, config: dict[str, Any]) -> None:
        import wandb

        self._wandb = wandb
        self._run = wandb.init(project=os.environ.get("WANDB_PROJECT", PROJECT),
                               name=run_dir.resolve().name, dir=str(run_dir),
                               config=config, mode=mode())

    def log_metrics(self, step: int, values: Mapping[str, float]) -> None:
        self._run.log(dict(values), step=step)

    def log_result(self, values: Mapping[str, float], verdict: str | None) -> None:
        self._run.summary.update(dict(values))
        if verdict is not None:
            self._run.summary["verdict"] = verdict

    def log_figure(self, path: Path) -> None:
        self._run.log({f"figures/{path.stem}": self._wandb.Image(str(path))})

    def close(self, failed: bool) -> None:
        self._run.finish(exit_code=1 if failed else 0)


def open_wandb(run_dir: Path, config: dict[str, Any], uri: str | None) -> WandbTracker:
    """A W&B run writing into ``run_dir``/wandb (``uri``: MLflow's only)."""
    return WandbTracker(run_dir, config)
