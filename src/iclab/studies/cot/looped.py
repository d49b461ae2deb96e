"""What a looped transformer run (``--model transformer --loops T``; Yang et al., ICLR 2024)
adds to result.json and to ``iclab train``'s table: its parameter count beside the non-looped
transformers' (docs/theory.md section 20.3). The looped model applies its ``layers`` blocks T
times with shared weights, so it holds the parameters of ``layers`` blocks and computes as
deeply as ``layers`` x T of them.

Keys: parameter_count (the looped model), parameter_count_unlooped_same_depth (``layers`` x T
blocks without loops: the same compute), loop_rows (the rows ``iclab train`` prints). The same
weights unlooped are the transformer of ``layers`` blocks (the looped model's own count).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iclab.models.base import Model
from iclab.runs.outputs import RunOutput
from iclab.studies.transformer.model import Transformer
from iclab.studies.transformer.options import TransformerOptions
from iclab.tasks.base import TaskFamily

if TYPE_CHECKING:
    from iclab.config.train import TrainConfig


def loop_counts(options: TransformerOptions, d: int) -> dict[str, Any]:
    """The result keys of the module docstring for a looped transformer's options."""
    loops = options.loops or 1
    unlooped = dataclasses.replace(options, layers=options.layers * loops, loops=None)
    own = Transformer.parameter_count(options, d)
    deep = Transformer.parameter_count(unlooped, d)
    return {"loops": loops, "parameter_count": own,
            "parameter_count_unlooped_same_depth": deep,
            "loop_rows": [[f"parameters ({options.layers} blocks x {loops} loops)", str(own)],
                          [f"parameters, non-looped: {options.layers} blocks",
                           f"{own} (the same weights)"],
                          [f"parameters, non-looped: {options.layers * loops} blocks",
                           str(deep)]]}


class LoopOutput(RunOutput):
    """The parameter counts of every transformer run with ``--loops``."""

    name = "looped transformer"

    def applies(self, model: Model, task: TaskFamily) -> bool:
        return isinstance(model, Transformer) and model.options.loops is not None

    def write(self, model: Model, task: TaskFamily, config: TrainConfig,
              path: Path) -> dict[str, Any]:
        assert isinstance(model, Transformer)
        return loop_counts(model.options, model.d)
