"""The registries a command works with, built once and passed down as one object.

``Registries`` holds the studies of one command (every installed study by default,
``iclab.utils.studies``) and what they and the core add: the models (``ModelRegistry``), the
task families (``FamilyRegistry``), the claim kinds (``ClaimRegistry``), the commands of the
``iclab`` group, the modes of ``iclab theory`` and its additions to the one-layer optimum's
output, and the outputs a finished run adds
(``RunOutput``). The caller may add registrations in Python; the plug-ins the command's
options or spec name join the same registries (a plug-in a spec names joins when the spec is
read). A spec is read with it (``load_spec(path, registries)``), its claims are checked and
its report drawn with the same claim kinds, a run is trained and evaluated with the same
models, families and outputs, and ``iclab theory`` builds its family from the same families;
nothing rebuilds a registry on the way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from iclab.experiments.claims.registry import ClaimRegistry
from iclab.models.registry import ModelRegistry
from iclab.runs.outputs import RunOutput
from iclab.tasks.registry import FamilyRegistry
from iclab.utils.errors import ConfigError
from iclab.utils.studies import Study, check_studies, installed_studies

CommandFactory = Callable[["Registries", list[str]], Any]
"""(registries, the command line's arguments) -> a ``click.Command`` added to the ``iclab``
group (the arguments tell a command which model's or family's options to offer)."""


class Registries:
    """The studies, models, families, claim kinds, commands, theory modes and run outputs of
    one command. ``studies``: the studies to build from (default: every installed study);
    ``models``, ``families``, ``claims``: registries to use as they are (default: the core's
    built-ins and the studies')."""

    def __init__(self, models: ModelRegistry | None = None,
                 families: FamilyRegistry | None = None, claims: ClaimRegistry | None = None,
                 studies: Sequence[Study] | None = None) -> None:
        self.studies: tuple[Study, ...] = (installed_studies() if studies is None
                                           else check_studies(studies))
        self.models = models if models is not None else ModelRegistry(studies=self.studies)
        self.families = (families if families is not None
                         else FamilyRegistry(studies=self.studies))
        self.claims = claims if claims is not None else ClaimRegistry(studies=self.studies)
        self.commands: list[CommandFactory] = []
        self.theory_modes: list[Any] = []
        self.theory_additions: list[Any] = []
        self.run_outputs: list[RunOutput] = []
        self.study_references: list[str] = []
        """The references of the studies added by ``add_study(..., reference)`` (``--study``),
        which a sweep's workers load too."""
        for study in self.studies:
            self._add_hooks(study)

    def _add_hooks(self, study: Study) -> None:
        self.commands.extend(study.commands())
        self.theory_modes.extend(study.theory_modes())
        self.theory_additions.extend(study.theory_additions())
        for output in study.run_outputs():
            if not isinstance(output, RunOutput):
                raise ConfigError(f"study {study.name!r}: run_outputs must be RunOutput "
                                  f"objects, got {output!r}")
            self.run_outputs.append(output)

    def add_study(self, study: Study, reference: str | None = None) -> None:
        """Add a study to every registry (a user's ``--study FILE.py:STUDY``, with its
        ``reference`` so that a sweep's workers load it too, or in Python): its name must be
        new and the studies it requires present."""
        self.studies = check_studies((*self.studies, study))
        if reference is not None:
            self.study_references.append(reference)
        self.models.add_study(study)
        self.families.add_study(study)
        self.claims.add_study(study)
        self._add_hooks(study)
