"""The ``development`` study: how the algorithm a model computes changes over training
(docs/guide/development.md). ``iclab train --checkpoints K`` keeps the weights through
training; ``iclab development RUN_DIR`` measures each checkpoint of a run on a task pool
against the exact predictors (``measure``: dMMSE, ridge, least squares, optimal GD) and,
asked, its local learning coefficient (``llc``); the ``development`` claim kind
(``claims``) judges the final checkpoint's place between dMMSE and ridge (Raventos et al.
2023). Requires ``pool`` (dMMSE and the task-pool family)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iclab.experiments.specs.builtin import reproduce_sections
from iclab.studies.development.claims import DevelopmentClaim
from iclab.studies.development.run import make_development_command
from iclab.utils.studies import Study


def _command(registries: Any, args: list[str]) -> Any:
    return make_development_command(registries)


HERE = Path(__file__).parent
"""The study's folder: its sections of iclab reproduce."""

STUDY = Study(
    "development",
    "a model's checkpoints through training against every exact predictor of its task pool "
    "(dMMSE, ridge, least squares, optimal GD), and their local learning coefficient",
    requires=("pool",),
    claim_kinds=lambda: (DevelopmentClaim(),),
    commands=lambda: (_command,),
    spec_sections=lambda: reproduce_sections(HERE),
)
