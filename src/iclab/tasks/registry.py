"""Task families by name: one registry object holding the built-in families and the user's.

The core's families register exactly as a user's family does (``core_families`` in
``iclab.tasks.family_entry``): ``linear-gaussian`` (``cov_x``, ``cov_w``), ``relu``,
``two-layer-relu`` (``width``, default 8) and ``anisotropic``; so do the families of every
study (Garg et al.'s ``sparse-linear``, ``decision-tree`` and ``relu-network``:
``iclab.studies.garg``) and the extensions studies add to families (the covariates study's
``x_law`` and correlated contexts, the pool study's task pools, on ``linear-gaussian``),
through the study's declaration (``iclab.utils.studies``). Each family and extension declares
its options (``FamilyEntry.options_class``, ``FamilyExtension.options_class``).

A user adds a family with a function that draws f's values on given inputs,

    def draw(inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        # inputs: (B, k, d) drawn from N(0, I); draw one f per row from ``generator``
        # and return its values at the row's k inputs: (B, k).

either in Python, ``registry = FamilyRegistry(); registry.register_family("cubic", draw)``
then ``registry.make_family("cubic", d, n, sigma)``, or from the command line as
``--family my_module:draw`` (importable, or a file my_module.py in the working directory) or
``--family path/to/file.py:draw``; ``rotation_invariant = True`` and ``sign_symmetric = True``
attributes on the function declare those properties of f's law. A family with options is a
``FamilyEntry`` with an ``options_class`` (``registry.register(entry)``). No registry is
global: a ``FamilyRegistry`` is an ordinary object the caller owns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from iclab.tasks.base import TaskFamily, check_family, check_scalars
from iclab.tasks.family_entry import (
    FamilyEntry,
    FamilyExtension,
    check_options_class,
    core_families,
)
from iclab.tasks.nonlinear import DrawFunction, FunctionTask
from iclab.utils.errors import ConfigError
from iclab.utils.fields import field_infos, validate
from iclab.utils.plugins import is_plugin_reference, load_plugin
from iclab.utils.studies import Study, installed_studies

FAMILY_NAMES = ("linear-gaussian", "relu", "two-layer-relu", "anisotropic")
"""The core's families, in the order ``iclab families`` lists them (the studies' follow)."""

Family = TaskFamily
"""Every task family ``make_family`` returns (kept as a name for older imports)."""

_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(
            f"family name {name!r} must be lower-case letters, digits, '-', '_' or '.'"
        )
    return name


def _function_entry(name: str, draw: DrawFunction, rotation_invariant: bool,
                    sign_symmetric: bool) -> FamilyEntry:
    def build(d: int, n: int, sigma: float, options: Any) -> TaskFamily:
        return FunctionTask(d, n, sigma, draw, name, rotation_invariant, sign_symmetric)

    kind = "rotation-invariant " if rotation_invariant else ""
    return FamilyEntry(name, build, f"user {kind}family: x ~ N(0, I), f drawn by {name}",
                       plugin=True)


def load_draw_function(spec: str) -> FamilyEntry:
    """Import ``module:function`` or ``path/file.py:function`` as a user family."""
    draw = load_plugin(spec, "family")
    if not callable(draw):
        raise ConfigError(f"family {spec!r}: {draw!r} is not a function")
    return _function_entry(spec, draw, bool(getattr(draw, "rotation_invariant", False)),
                           bool(getattr(draw, "sign_symmetric", False)))


class FamilyRegistry:
    """Task families by name: the built-ins (unless ``builtins=False``: the core's and those
    of ``studies``, every installed study by default) and those registered on this object,
    plus ``MODULE:FUNCTION`` / ``file.py:FUNCTION`` references."""

    def __init__(self, builtins: bool = True, studies: Sequence[Study] | None = None) -> None:
        self._entries: dict[str, FamilyEntry] = {}
        self._extensions: list[FamilyExtension] = []
        if builtins:
            register_builtin_families(self)
            for study in installed_studies() if studies is None else studies:
                self.add_study(study)

    def add_study(self, study: Study) -> None:
        """Register the families and the extensions ``study`` declares (``Study.families``,
        ``Study.family_extensions``)."""
        for entry in study.families():
            if not isinstance(entry, FamilyEntry):
                raise ConfigError(f"study {study.name!r}: families must be FamilyEntry "
                                  f"objects, got {entry!r}")
            self.register(entry)
        for extension in study.family_extensions():
            if not isinstance(extension, FamilyExtension):
                raise ConfigError(f"study {study.name!r}: family_extensions must be "
                                  f"FamilyExtension objects, got {extension!r}")
            self.extend(extension)

    def extend(self, extension: FamilyExtension) -> None:
        """Add an extension: its options join those of the families it names."""
        check_options_class(extension.options_class, f"family extension {extension.name!r}")
        self._extensions.append(extension)

    def extensions_of(self, name: str) -> tuple[FamilyExtension, ...]:
        """The extensions of the family ``name``, in registration order."""
        return tuple(e for e in self._extensions if name in e.families)

    def option_owners(self, name: str) -> tuple[type, ...]:
        """The options classes of the family ``name``: its own, then its extensions'."""
        return (self.entry(name).options_class,
                *(e.options_class for e in self.extensions_of(name)))

    def takers(self, option: str) -> list[str]:
        """The registered families that declare an option called ``option``."""
        return [name for name in self._entries
                if any(option in field_infos(cls) for cls in self.option_owners(name))]

    def is_plugin(self, name: str) -> bool:
        """Whether the family ``name`` is a user's draw function (registered or by
        reference)."""
        known = self._entries.get(name)
        return known.plugin if known is not None else True

    @property
    def names(self) -> tuple[str, ...]:
        """Registered names in registration order (built-ins first)."""
        return tuple(self._entries)

    def entries(self) -> tuple[FamilyEntry, ...]:
        return tuple(self._entries.values())

    def allowed(self) -> str:
        """The allowed family names, for error messages."""
        return ", ".join((*self._entries, "MODULE:FUNCTION", "FILE.py:FUNCTION"))

    def register(self, entry: FamilyEntry) -> None:
        """Add a family; its name must be new and its options declared with defaults."""
        _check_name(entry.name)
        check_options_class(entry.options_class, f"family {entry.name!r}")
        if entry.name in self._entries:
            raise ConfigError(f"family {entry.name!r} already exists; pick another name")
        self._entries[entry.name] = entry

    def register_family(
        self, name: str, draw: DrawFunction, *, rotation_invariant: bool = False,
        sign_symmetric: bool = False,
    ) -> None:
        """Add a family whose f's values on inputs (B, k, d) are drawn by ``draw``: (B, k)."""
        _check_name(name)
        if not callable(draw):
            raise ConfigError(f"family {name!r}: draw must be callable, got {draw!r}")
        self.register(_function_entry(name, draw, rotation_invariant, sign_symmetric))

    def entry(self, name: str) -> FamilyEntry:
        """The entry called ``name`` (a registered name or a plugin reference)."""
        if not isinstance(name, str):
            raise ConfigError(f"family must be a name, got {name!r}")
        known = self._entries.get(name)
        if known is not None:
            return known
        if is_plugin_reference(name):
            return load_draw_function(name)
        raise ConfigError(f"unknown family {name!r}; allowed: {self.allowed()}")

    def check_name(self, name: str) -> None:
        """Raise ConfigError unless ``name`` is registered or has a plugin reference's form
        (the plugin itself is imported only when the family is made)."""
        if not isinstance(name, str) or (name not in self._entries
                                          and not is_plugin_reference(name)):
            raise ConfigError(f"unknown family {name!r}; allowed: {self.allowed()}")

    def build(self, name: str, d: int, n: int, sigma: float, options: dict[str, Any],
              seed: int = 0) -> TaskFamily:
        """The family ``name`` at (d, n, sigma) from the values of its own and its extensions'
        declared options (``options``: option name -> value; missing ones at their defaults;
        each checked against its declaration), ``seed`` for what an extension draws once (a
        task pool)."""
        entry = self.entry(name)
        check_scalars(d, n, sigma)
        made = []
        for cls in self.option_owners(name):
            made.append(cls(**{key: options[key] for key in field_infos(cls) if key in options}))
            validate(made[-1])
        family = check_family(entry.build(d, n, float(sigma), made[0]), name)
        for extension, values in zip(self.extensions_of(name), made[1:], strict=True):
            family = extension.apply(family, values, made[0], seed)
        return family

    def make_family(
        self,
        name: str,
        d: int,
        n: int,
        sigma: float,
        width: int | None = None,
        cov_x: np.ndarray | None = None,
        cov_w: np.ndarray | None = None,
        seed: int = 0,
        **parameters: Any,
    ) -> TaskFamily:
        """The family ``name`` at (d, n, sigma) with its options as keywords (None = not
        given; matrices as arrays; ``width`` the two-layer-relu family's); an option the
        family does not declare is refused with one line."""
        given = {key: value for key, value in
                 {"width": width, "cov_x": cov_x, "cov_w": cov_w, **parameters}.items()
                 if value is not None}
        declared = {key for cls in self.option_owners(name) for key in field_infos(cls)}
        for key in given:
            if key not in declared:
                takers = self.takers(key)
                where = f"family {' or '.join(takers)}" if takers else "no family"
                raise ConfigError(f"{key} applies only to {where}, not {name!r}")
        values = {key: value.tolist() if isinstance(value, np.ndarray) else value
                  for key, value in given.items()}
        return self.build(name, d, n, sigma, values, seed)


def register_builtin_families(registry: FamilyRegistry) -> None:
    """Register the core's families on ``registry``, exactly as a user registers theirs."""
    for entry in core_families():
        registry.register(entry)


def make_family(
    name: str,
    d: int,
    n: int,
    sigma: float,
    width: int | None = None,
    cov_x: np.ndarray | None = None,
    cov_w: np.ndarray | None = None,
) -> TaskFamily:
    """A built-in family (or a plugin reference) by name; see ``FamilyRegistry.make_family``."""
    return FamilyRegistry().make_family(name, d, n, sigma, width, cov_x, cov_w)
