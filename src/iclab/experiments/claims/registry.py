"""Claim kinds by name, and every claim of a spec checked on its runs.

A ``ClaimRegistry`` holds the built-in kinds (the core's, ``register_builtin_claims``, and
those every study declares, ``iclab.utils.studies``: each registered exactly as a user's kind
is) and those registered on it. A spec may also name a kind as a plug-in
reference, ``kind = "my_claims.py:SlopeClaim"`` or ``"my_package.claims:SlopeClaim"`` (see
``iclab.utils.plugins``): the class is loaded when the spec is read, instantiated once and
registered under that reference, so the checks and the report of the same command use it.
No registry is global: the command owns one (``iclab.experiments.registries``).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from iclab.experiments.claims.depth import DEPTH_KINDS
from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind
from iclab.experiments.claims.plugin_check import check_claim_kind, checked_claims
from iclab.experiments.claims.theorems import THEOREM_KINDS
from iclab.experiments.specs.results import RunRecord, sites
from iclab.experiments.specs.spec import Spec
from iclab.utils.errors import ConfigError
from iclab.utils.plugins import is_plugin_reference, load_plugin
from iclab.utils.studies import Study, installed_studies


def load_claim_kind(reference: str) -> ClaimKind:
    """An instance of the ``ClaimKind`` subclass named by the plug-in ``reference``;
    ConfigError (one line) when it cannot be loaded, is not such a class, or cannot be made
    without arguments."""
    kind_class = load_plugin(reference, "claim kind")
    if not (inspect.isclass(kind_class) and issubclass(kind_class, ClaimKind)):
        raise ConfigError(f"claim kind {reference!r} must be a subclass of "
                          f"iclab.experiments.claims.kind.ClaimKind, got {kind_class!r}")
    try:
        return kind_class()
    except Exception as error:
        raise ConfigError(f"claim kind {reference!r}: {kind_class.__name__}() failed "
                          f"({type(error).__name__}: {error})") from None


class ClaimRegistry:
    """Claim kinds by name: the built-ins (unless ``builtins=False``: the core's and those of
    ``studies``, every installed study by default), those registered, and plug-in references
    (loaded and registered on first use)."""

    def __init__(self, builtins: bool = True, studies: Sequence[Study] | None = None) -> None:
        self._kinds: dict[str, ClaimKind] = {}
        if builtins:
            register_builtin_claims(self)
            for study in installed_studies() if studies is None else studies:
                self.add_study(study)

    def add_study(self, study: Study) -> None:
        """Register the claim kinds ``study`` declares (``Study.claim_kinds``)."""
        for kind in study.claim_kinds():
            if not isinstance(kind, ClaimKind):
                raise ConfigError(f"study {study.name!r}: claim_kinds must be ClaimKind "
                                  f"instances, got {kind!r}")
            self.register(kind)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._kinds)

    def register(self, kind: ClaimKind, name: str | None = None) -> None:
        """Add ``kind`` under ``name`` (default: its ``name``), which must be new, after
        checking what it declares (``check_claim_kind``)."""
        check_claim_kind(kind)
        key = name or kind.name
        if not key or key in self._kinds:
            raise ConfigError(f"claim kind {key!r} is empty or already registered")
        self._kinds[key] = kind

    def measuring_kinds(self) -> dict[str, ClaimKind]:
        """measurement_key -> the registered kind that makes ``[[measurements]]`` tables with
        that key (``ClaimKind.measurement_key``)."""
        return {kind.measurement_key: kind for kind in self._kinds.values()
                if kind.measurement_key is not None}

    def get(self, name: str) -> ClaimKind:
        """The kind called ``name``; a plug-in reference is loaded and registered."""
        kind = self._kinds.get(name)
        if kind is not None:
            return kind
        if is_plugin_reference(name):
            kind = load_claim_kind(name)
            self.register(kind, name)
            return kind
        raise ConfigError(f"kind must be one of {', '.join(self._kinds)} or a plug-in "
                          f"(MODULE:CLASS, FILE.py:CLASS); got {name!r}")


def register_builtin_claims(registry: ClaimRegistry) -> None:
    """Register the core's claim kinds, exactly as a new kind would be registered."""
    for kind_class in (*THEOREM_KINDS, *DEPTH_KINDS):
        registry.register(kind_class())


def evaluate_claims(
    spec: Spec, records: dict[str, RunRecord], registry: ClaimRegistry,
    cache: dict[Any, Any] | None = None, out_dir: str | Path | None = None,
    seconds: dict[str, float] | None = None,
) -> list[Claim]:
    """Every claim of ``spec`` on the finished ``records``, in spec order, by the kinds of
    ``registry``; ``out_dir`` is the sweep folder, for kinds that read files the sweep wrote
    in the runs' folders. ``seconds``: the seconds (wall) of checking each section's claims
    are added to it, by section."""
    context = ClaimContext(cache, out_dir, spec, records, registry)
    claims: list[Claim] = []
    for claim_spec in spec.claims:
        started = time.perf_counter()
        group_sites = sites(spec, records, claim_spec.group) if claim_spec.group else []
        claims.extend(checked_claims(registry.get(claim_spec.kind), claim_spec, group_sites,
                                     context))
        if seconds is not None:
            seconds[claim_spec.section] = (seconds.get(claim_spec.section, 0.0)
                                           + time.perf_counter() - started)
    return claims
