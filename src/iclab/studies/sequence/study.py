"""The ``sequence`` study: an H3-like state-space layer (``h3``), gated linear attention
(``gla``) and a Mamba-style selective state-space stack (``mamba``) as in-context learners,
the ``drifting-linear`` family with its Kalman-filter Bayes predictor, the exact optimum of
weighted preconditioned GD (``wpgd``) in ``iclab theory`` and the models' WPGD read-out in
result.json. Its one declaration, ``STUDY``, is listed under the
``iclab.studies`` entry points like a user's installed study."""

from __future__ import annotations

from pathlib import Path

from iclab.experiments.specs.builtin import reproduce_sections
from iclab.studies.sequence.claims import WPGD_KINDS
from iclab.studies.sequence.family import DriftingOptions, drifting_family
from iclab.studies.sequence.gla import GatedLinearAttention
from iclab.studies.sequence.h3 import H3
from iclab.studies.sequence.mamba import Mamba
from iclab.studies.sequence.outputs import WPGD_ADDITION, WPGDReadoutOutput
from iclab.tasks.family_entry import FamilyEntry
from iclab.utils.studies import Study

HERE = Path(__file__).parent
"""The study's folder: its sections of iclab reproduce (reproduce.toml, reproduce-quick.toml)."""

STUDY = Study(
    "sequence",
    "H3-like state-space and gated linear attention models as weighted preconditioned GD, a "
    "Mamba-style selective SSM, the drifting-linear family, its Kalman-filter Bayes predictor "
    "and the exact WPGD optimum",
    models=lambda: (H3, GatedLinearAttention, Mamba),
    families=lambda: (FamilyEntry(
        "drifting-linear", drifting_family,
        "linear task drifting along the prompt: w_(i+1) = rho w_i + sqrt(1 - rho^2) xi_i, "
        "the query labelled by w_(n+1)", DriftingOptions),),
    claim_kinds=lambda: tuple(kind() for kind in WPGD_KINDS),
    theory_additions=lambda: (WPGD_ADDITION,),
    run_outputs=lambda: (WPGDReadoutOutput(),),
    spec_sections=lambda: reproduce_sections(HERE),
)
