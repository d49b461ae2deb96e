"""The ``asymptotic`` study: Lu et al.'s asymptotic theory of ridge-fitted linear attention on
finite pretraining data (docs/theory.md section 16): the closed forms (``formulas``,
``deterministic``, ``errors``), the finite-d simulation (``simulation``), ``iclab theory
--asymptotic`` (``theory_mode``) and the ``lu-asymptotic`` claim kind with its figure
(``claims``, ``figure``). Its one declaration, ``STUDY``, is listed under the
``iclab.studies`` entry points like a user's installed study."""

from __future__ import annotations

from pathlib import Path

from iclab.cli.theory.modes import TheoryMode
from iclab.experiments.specs.builtin import reproduce_sections
from iclab.studies.asymptotic.claims import LuAsymptoticClaim
from iclab.studies.asymptotic.theory_mode import asymptotic_mode, asymptotic_options
from iclab.utils.studies import Study

HERE = Path(__file__).parent
"""The study's folder: its sections of iclab reproduce."""

STUDY = Study(
    "asymptotic",
    "Lu et al.'s asymptotic e_ICL and e_IDG of ridge-fitted linear attention, and their "
    "finite-d simulation",
    claim_kinds=lambda: (LuAsymptoticClaim(),),
    theory_modes=lambda: (TheoryMode("asymptotic", asymptotic_options,
                                     lambda options: bool(options.get("asymptotic")),
                                     asymptotic_mode),),
    spec_sections=lambda: reproduce_sections(HERE),
)
