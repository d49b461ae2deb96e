"""The ``dynamics`` study: training dynamics of multi-head linear attention (docs/theory.md
section 18). The exact population loss of the heads (``heads_loss``), gradient flow
(``flow``, ``flow_curve``), the rank-k plateau theory (``plateaus``), SGD replicates from the
run's seeded start beside the flow (``run``, ``outputs``), the ``iclab dynamics`` command
(``command``) and the ``dynamics`` claim kind (``claim``). Its one declaration, ``STUDY``, is
listed under the ``iclab.studies`` entry points like a user's installed study."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iclab.cli.run_options import option_argument
from iclab.experiments.specs.builtin import reproduce_sections
from iclab.studies.dynamics.claim import DynamicsClaim
from iclab.studies.dynamics.command import make_dynamics_command
from iclab.utils.studies import Study


def _command(registries: Any, args: list[str]) -> Any:
    return make_dynamics_command(registries, option_argument(args, "--family"))


HERE = Path(__file__).parent
"""The study's folder: its sections of iclab reproduce."""

STUDY = Study(
    "dynamics",
    "SGD's loss curve beside the exact gradient flow of multi-head linear attention, and its "
    "plateaus",
    claim_kinds=lambda: (DynamicsClaim(),),
    commands=lambda: (_command,),
    spec_sections=lambda: reproduce_sections(HERE),
)
