"""The ``cot`` study: chain of thought and looping (Huang, Wang and Lee, ICLR 2025;
docs/theory.md section 21). In-context weight prediction, whose target is the task vector w
itself, with the exact error of k-step GD from Wishart moments (``weights_theory``; ``iclab
theory --target weights``: ``theory_mode``); ``lsa-cot``, the one-layer model that writes K
estimate tokens (``model``), and its weight error beside the exact (``outputs``); the looped
transformer's parameter counts (``looped``: ``--loops`` is the transformer's own option).
Its one declaration, ``STUDY``, is listed under the ``iclab.studies`` entry points like a
user's installed study."""

from __future__ import annotations

from pathlib import Path

from iclab.cli.theory.modes import TheoryMode
from iclab.experiments.specs.builtin import reproduce_sections
from iclab.studies.cot.claims import COT_KINDS
from iclab.studies.cot.looped import LOOP_KINDS, LoopOutput
from iclab.studies.cot.model import LSACoT
from iclab.studies.cot.outputs import WeightErrorOutput
from iclab.studies.cot.theory_mode import weights_asked, weights_mode, weights_options
from iclab.utils.studies import Study

HERE = Path(__file__).parent
"""The study's folder: its sections of iclab reproduce."""

STUDY = Study(
    "cot",
    "in-context weight prediction: exact k-step GD, a one-layer LSA that writes its own "
    "estimates (chain of thought)",
    models=lambda: (LSACoT,),
    requires=("transformer",),
    run_outputs=lambda: (WeightErrorOutput(), LoopOutput()),
    claim_kinds=lambda: tuple(kind() for kind in (*COT_KINDS, *LOOP_KINDS)),
    spec_sections=lambda: reproduce_sections(HERE),
    theory_modes=lambda: (TheoryMode("weight prediction", weights_options, weights_asked,
                                     weights_mode),),
)
