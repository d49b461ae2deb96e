"""The ``transformer`` study: Garg et al.'s GPT-style in-context learner (``model``), its
error at every context length beside generic and family baselines and the exact curves
(``prefix_curves``, ``prefix_outputs``, ``closed_forms``) and the ``prefix`` claim kind
(``prefix_claim``). Its one declaration, ``STUDY``, is listed under the ``iclab.studies``
entry points like a user's installed study."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from iclab.experiments.specs.builtin import reproduce_sections
from iclab.models.base import Model
from iclab.runs.outputs import RunOutput
from iclab.studies.transformer.model import Transformer
from iclab.studies.transformer.prefix_claim import PREFIX_KINDS
from iclab.studies.transformer.prefix_curves import PREFIX_PROMPTS, prefix_curves, prefix_summary
from iclab.studies.transformer.prefix_outputs import write_prefix_outputs
from iclab.tasks.base import TaskFamily
from iclab.training.run_folder import RunFolder
from iclab.utils.studies import Study

if TYPE_CHECKING:
    from iclab.config.train import TrainConfig


class PrefixCurvesOutput(RunOutput):
    """prefix.json, prefix.csv and prefix.png of every model that declares
    ``has_prefix_predictions``, and their summary keys in result.json."""

    name = "prefix curves"

    def applies(self, model: Model, task: TaskFamily) -> bool:
        return model.has_prefix_predictions

    def write(self, model: Model, task: TaskFamily, config: TrainConfig,
              path: Path) -> dict[str, Any]:
        curves = prefix_curves(model, task, min(PREFIX_PROMPTS, config.run.eval_prompts),
                               config.run.seed)
        write_prefix_outputs(RunFolder(path).prefix_files, curves,
                             title=f"{config.model_name}, {config.task.family}")
        return prefix_summary(curves)


HERE = Path(__file__).parent
"""The study's folder: its sections of iclab reproduce."""

STUDY = Study(
    "transformer",
    "Garg et al.'s GPT-style transformer and its prefix curves beside baselines and exact "
    "curves",
    models=lambda: (Transformer,),
    claim_kinds=lambda: tuple(kind() for kind in PREFIX_KINDS),
    run_outputs=lambda: (PrefixCurvesOutput(),),
    spec_sections=lambda: reproduce_sections(HERE),
)
