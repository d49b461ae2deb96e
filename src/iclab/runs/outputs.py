"""Run outputs: what a study adds to a finished training run, beside result.json.

A ``RunOutput`` declares which trained models it applies to (``applies``, asked of the model's
declared capabilities) and writes its files into the run folder, returning the keys it adds to
result.json. ``run_training`` calls every output of its registries after the evaluation and
before the verdict, so result.json (written last) holds their keys; the transformer study's
prefix curves (prefix.json, prefix.csv, prefix.png) are one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iclab.models.base import Model
from iclab.tasks.base import TaskFamily

if TYPE_CHECKING:
    from iclab.config.train import TrainConfig


class RunOutput(ABC):
    """Files and result keys a study adds to every run whose model it applies to."""

    name: str = ""
    """A short name for error messages."""

    @abstractmethod
    def applies(self, model: Model, task: TaskFamily) -> bool:
        """Whether the trained ``model`` on ``task`` gets this output (from what the model
        and the family declare)."""

    @abstractmethod
    def write(self, model: Model, task: TaskFamily, config: TrainConfig,
              path: Path) -> dict[str, Any]:
        """Write the output's files into the run folder ``path`` (atomically) and return
        the keys it adds to result.json; a key ending in ``_rows``, a list of (label, text)
        pairs, is also shown by ``iclab train`` above the test loss."""
