"""The ``shift`` study: a trained model under test laws that differ from its training law
(docs/theory.md section 8). Gaussian test laws shifted in one way (``laws``; Garg et al.'s
input shifts from the ``garg`` study), the exact population loss of a linear read-out under
them (``population``) and the training optimum's exact curves beside the Bayes loss
(``optimum``), the measurement of a trained model and its files (``measure``, ``outputs``,
``run``: shift.json, shift.csv, shift.png), the growth of the ratio to the Bayes loss
(``growth``), ``iclab shift`` (``command``), ``iclab theory --shift`` (``theory_mode``) and the
``shift`` and ``shift-growth`` claim kinds with the ``[[measurements]]`` tables the ``shift``
kind makes (``claims``). Its one declaration, ``STUDY``, is listed under the
``iclab.studies`` entry points like a user's installed study."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iclab.experiments.specs.builtin import reproduce_sections
from iclab.studies.shift.claims.claim import ShiftClaim
from iclab.studies.shift.claims.growth_claim import ShiftGrowthClaim
from iclab.studies.shift.command import shift_command
from iclab.studies.shift.theory_mode import SHIFT_ADDITION
from iclab.utils.studies import Study


def _command(registries: Any, args: list[str]) -> Any:
    return shift_command


HERE = Path(__file__).parent
"""The study's folder: its sections of iclab reproduce."""

STUDY = Study(
    "shift",
    "trained models under shifted test laws, beside the exact theory and the Bayes loss",
    requires=("garg", "softmax"),  # Garg et al.'s input shifts; its section's softmax runs
    claim_kinds=lambda: (ShiftClaim(), ShiftGrowthClaim()),
    commands=lambda: (_command,),
    theory_additions=lambda: (SHIFT_ADDITION,),
    spec_sections=lambda: reproduce_sections(HERE),
)
