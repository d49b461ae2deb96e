"""The registries a command works with, built once and passed down as one object.

``Registries`` holds the models (``ModelRegistry``), the task families (``FamilyRegistry``) and
the claim kinds (``ClaimRegistry``) of one command: the built-ins, what the caller registered
in Python, and the plug-ins the command's options or spec name (a plug-in a spec names joins
its registry when the spec is read). A spec is read with it (``load_spec(path, registries)``),
its claims are checked and its report drawn with the same claim kinds, and ``iclab theory``
builds its family from the same families; nothing rebuilds a registry on the way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iclab.experiments.claims.registry import ClaimRegistry
from iclab.models.registry import ModelRegistry
from iclab.tasks.registry import FamilyRegistry


@dataclass(frozen=True)
class Registries:
    """The model, family and claim registries of one command (each the built-ins unless
    given)."""

    models: ModelRegistry = field(default_factory=ModelRegistry)
    families: FamilyRegistry = field(default_factory=FamilyRegistry)
    claims: ClaimRegistry = field(default_factory=ClaimRegistry)
