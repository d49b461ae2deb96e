"""TensorBoard: event files in RUN/tensorboard, written by torch's SummaryWriter (which needs
the tensorboard package, ``iclab[tensorboard]``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

FOLDER = "tensorboard"
"""The event files' folder inside the run folder (``tensorboard --logdir RUN/tensorboard``)."""

FLUSH_SECONDS = 10
"""The longest a logged scalar waits before it is in the event file (a live TensorBoard)."""


class TensorBoardTracker:
    """Scalars per metrics line (train/...), the result's numbers (result/...) at the last
    step, the config and the verdict as text, the figures as images."""

    def __init__(self, run_dir: Path, config: dict[str, Any]) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self._writer = SummaryWriter(log_dir=str(run_dir / FOLDER), flush_secs=FLUSH_SECONDS)
        self._step = 0
        text = json.dumps(config, indent=2, sort_keys=True)
        self._writer.add_text("config", "".join(f"    {line}\n" for line in text.splitlines()))

    def log_metrics(self, step: int, values: Mapping[str, float]) -> None:
        self._step = step
        for key, value in values.items():
            self._writer.add_scalar(key, value, step)

    def log_result(self, values: Mapping[str, float], verdict: str | None) -> None:
        for key, value in values.items():
            self._writer.add_scalar(key, value, self._step)
        if verdict is not None:
            self._writer.add_text("verdict", verdict, self._step)

    def log_figure(self, path: Path) -> None:
        from matplotlib.image import imread

        image = imread(path)  # height x width x channels, floats in [0, 1] for a .png
        self._writer.add_image(f"figures/{path.stem}", image[..., :3], self._step,
                               dataformats="HWC")

    def close(self, failed: bool) -> None:
        self._writer.flush()
        self._writer.close()


def open_tensorboard(run_dir: Path, config: dict[str, Any], uri: str | None
                     ) -> TensorBoardTracker:
    """A TensorBoard tracker writing into ``run_dir``/tensorboard (``uri``: MLflow's only)."""
    return TensorBoardTracker(run_dir, config)
