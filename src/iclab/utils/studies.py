"""Studies: the one door through which a follow-up study (iclab's own or a user's) adds to the
core.

A study is one folder (or one file) that declares what it adds with one ``Study`` object: its
models, task families, claim kinds (with the ``[[measurements]]`` tables they report),
commands, ``iclab theory`` modes and additions, and run outputs. Each
registry asks every study for its own part when it is built (``ModelRegistry`` calls
``Study.models``, ``FamilyRegistry`` ``Study.families``, and so on), so the core never names a
study: iclab's built-in studies are found exactly as a user's installed study is, through the
``iclab.studies`` entry-point group of the installed distributions
(``[project.entry-points."iclab.studies"]`` in pyproject.toml, ``name = "module:STUDY"``), and
a study in a file joins one command with ``iclab --study FILE.py:STUDY`` (or
``Registries.add_study`` in Python).

Every hook returns a sequence (empty by default) and is called only by the registry it feeds;
a study declares the studies it imports in ``requires`` (checked when the studies are
collected, and by tests/test_dependencies.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from iclab.utils.errors import ConfigError
from iclab.utils.plugins import load_plugin

ENTRY_POINT_GROUP = "iclab.studies"
"""The entry-point group a distribution lists its studies under."""

_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


def _none() -> Sequence[Any]:
    return ()


@dataclass(frozen=True)
class Study:
    """A study's one declaration.

    name: lower-case, unique among the studies of a command; description: one line for
    ``iclab studies``; requires: the names of the studies whose modules this one imports.
    Each hook is a function of no arguments returning the study's contributions to one
    registry (an empty sequence by default), so that nothing of the study is imported before
    a registry asks for it:

    - ``models``: ``iclab.models.Model`` subclasses (``ModelRegistry``);
    - ``families``: ``iclab.tasks.family_entry.FamilyEntry`` objects (``FamilyRegistry``);
    - ``family_extensions``: ``iclab.tasks.family_entry.FamilyExtension`` objects: options a
      study adds to some families (``FamilyRegistry``);
    - ``claim_kinds``: ``ClaimKind`` instances (``ClaimRegistry``);
    - ``commands``: functions ``(registries, args) -> click.Command`` (the ``iclab`` group;
      ``args``: the command line, to offer the options of the model or family it names);
    - ``theory_modes``: ``iclab.cli.theory.modes.TheoryMode`` objects (``iclab theory``);
    - ``theory_additions``: ``iclab.cli.theory.modes.TheoryAddition`` objects (rows added to
      the one-layer optimum's output of ``iclab theory``);
    - ``run_outputs``: ``iclab.runs.outputs.RunOutput`` objects (files and result keys a
      finished training run adds, ``run_training``);
    - ``spec_sections``: ``iclab.experiments.specs.builtin.SpecSection`` objects: the study's
      report sections of a built-in spec (``iclab reproduce``), each a TOML fragment in its
      folder.
    """

    name: str
    description: str
    requires: tuple[str, ...] = ()
    models: Callable[[], Sequence[Any]] = field(default=_none, compare=False)
    families: Callable[[], Sequence[Any]] = field(default=_none, compare=False)
    family_extensions: Callable[[], Sequence[Any]] = field(default=_none, compare=False)
    claim_kinds: Callable[[], Sequence[Any]] = field(default=_none, compare=False)
    commands: Callable[[], Sequence[Any]] = field(default=_none, compare=False)
    theory_modes: Callable[[], Sequence[Any]] = field(default=_none, compare=False)
    theory_additions: Callable[[], Sequence[Any]] = field(default=_none, compare=False)
    run_outputs: Callable[[], Sequence[Any]] = field(default=_none, compare=False)
    spec_sections: Callable[[], Sequence[Any]] = field(default=_none, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ConfigError(f"study name {self.name!r} must be lower-case letters, digits, "
                              f"'-' or '_', starting with a letter")
        if not isinstance(self.requires, tuple) or not all(
                isinstance(name, str) for name in self.requires):
            raise ConfigError(f"study {self.name!r}: requires must be a tuple of study names")


def check_studies(studies: Iterable[Study]) -> tuple[Study, ...]:
    """``studies`` as a tuple, after checking that each is a ``Study``, that names are unique
    and that every study's ``requires`` are among them; ConfigError (one line) otherwise."""
    checked: dict[str, Study] = {}
    for study in studies:
        if not isinstance(study, Study):
            raise ConfigError(f"a study must be an iclab.utils.studies.Study, got {study!r}")
        if study.name in checked:
            raise ConfigError(f"two studies are called {study.name!r}; study names must be "
                              f"unique")
        checked[study.name] = study
    for study in checked.values():
        missing = [name for name in study.requires if name not in checked]
        if missing:
            raise ConfigError(f"study {study.name!r} requires {', '.join(missing)}, which "
                              f"{'is' if len(missing) == 1 else 'are'} not installed")
    return tuple(checked.values())


def installed_studies() -> tuple[Study, ...]:
    """Every study the installed distributions list under ``iclab.studies``, iclab's own
    included, sorted by name (so every registry sees them in one order)."""
    found = []
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        try:
            study = point.load()
        except Exception as error:
            raise ConfigError(f"study {point.name!r} ({point.value}) cannot be loaded: "
                              f"{type(error).__name__}: {error}") from None
        found.append(study)
    return check_studies(found)


def load_study(reference: str) -> Study:
    """The ``Study`` named by a plug-in reference (``FILE.py:NAME`` or ``MODULE:NAME``)."""
    study = load_plugin(reference, "study")
    if not isinstance(study, Study):
        raise ConfigError(f"study {reference!r} must be an iclab.utils.studies.Study object, "
                          f"got {type(study).__name__}")
    return study


def dependency_order(studies: Sequence[Study]) -> tuple[Study, ...]:
    """``studies`` in their order, except that each comes after the studies it ``requires``
    that are among them (a study whose section reads another's runs comes after it, so the
    runs count in the section that trains them: ``iclab.experiments.specs.builtin``)."""
    by_name = {study.name: study for study in studies}
    placed: dict[str, Study] = {}

    def place(study: Study, path: tuple[str, ...]) -> None:
        if study.name in placed:
            return
        if study.name in path:
            raise ConfigError(f"studies require each other in a cycle: "
                              f"{' -> '.join((*path, study.name))}")
        for name in study.requires:
            if name in by_name:
                place(by_name[name], (*path, study.name))
        placed[study.name] = study

    for study in studies:
        place(study, ())
    return tuple(placed.values())

