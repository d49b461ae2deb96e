"""The ``probes`` study: read the algorithm out of a trained model. Ridge probes from every
hook point (``iclab.models.hooks``) to the exact least-squares, ridge and GD iterates and the
moments of each prompt (``iclab probe``), task vectors patched into other prompts
(``iclab patch``), and the Probes section of ``iclab reproduce``. Its one declaration,
``STUDY``, is listed under the ``iclab.studies`` entry points."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iclab.experiments.specs.builtin import reproduce_sections
from iclab.utils.studies import Study

HERE = Path(__file__).parent
"""The study's folder: its sections of iclab reproduce (reproduce.toml, reproduce-quick.toml)."""


def _probe(registries: Any, args: list[str]) -> Any:
    from iclab.studies.probes.command import probe_command

    return probe_command(registries)


def _patch(registries: Any, args: list[str]) -> Any:
    from iclab.studies.probes.patch_command import patch_command

    return patch_command(registries)


def _claim_kind() -> Any:
    from iclab.studies.probes.claims import ProbeClaim

    return ProbeClaim()


STUDY = Study(
    "probes",
    "ridge probes from every hook point to the exact OLS, ridge and GD iterates and moments "
    "of each prompt, with random-init and shuffled controls; task-vector patching",
    requires=("transformer",),  # its section reads the Transformers section's run
    commands=lambda: (_probe, _patch),
    claim_kinds=lambda: (_claim_kind(),),
    spec_sections=lambda: reproduce_sections(HERE),
)
