"""The specs shipped with iclab (``reproduce``, ``reproduce-quick``), assembled from the core's
file and the sections the studies declare, and spec files read with ``extends`` resolved.

A study adds its report sections to a built-in spec with ``Study.spec_sections``: each
``SpecSection`` names the built-in spec it joins and a TOML fragment in the study's folder
holding the section's ``[[groups]]``, ``[[claims]]`` and ``[[measurements]]`` (appended after
the core's, in the studies' order, each study after the studies it requires), its
``[sections]`` paragraph, ``[covariances]`` and ``[budgets]`` (merged; a key already there is
refused). A fragment for ``reproduce-quick``
holds the quick set's changes to the section: its groups' overrides (``drop = true`` leaves the
section out of the quick set), its ``[[override_claims]]`` and its budgets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from iclab.experiments.specs.claim_spec import SpecRegistries
from iclab.experiments.specs.extends import resolve_extends
from iclab.experiments.specs.spec import Spec, parse_spec
from iclab.experiments.specs.text import parse_text, read_spec_file
from iclab.utils.errors import ConfigError
from iclab.utils.studies import dependency_order

BUILTIN_SPECS = ("reproduce", "reproduce-quick")
LISTS = ("groups", "claims", "measurements", "override_claims")
TABLES = ("sections", "covariances", "budgets")


@dataclass(frozen=True)
class SpecSection:
    """A study's part of the built-in spec ``spec`` (one of ``BUILTIN_SPECS``): the TOML
    fragment at ``path``."""

    spec: str
    path: Path


def reproduce_sections(folder: Path) -> tuple[SpecSection, ...]:
    """A study's sections of the built-in specs: the files ``reproduce.toml`` and
    ``reproduce-quick.toml`` in its ``folder``, those that are there."""
    return tuple(SpecSection(name, folder / f"{name}.toml") for name in BUILTIN_SPECS
                 if (folder / f"{name}.toml").is_file())


def _merge(data: dict[str, Any], fragment: Any, source: str) -> None:
    """Add ``fragment``'s lists and tables to ``data``, refusing a key already there."""
    if not isinstance(fragment, dict) or set(fragment) - {*LISTS, *TABLES}:
        raise ConfigError(f"{source}: a spec section holds only {', '.join((*LISTS, *TABLES))}")
    for key in LISTS:
        if key in fragment:
            data[key] = [*data.get(key, []), *fragment[key]]
    for key in TABLES:
        table = dict(data.get(key, {}))
        for name, value in fragment.get(key, {}).items():
            if name in table:
                raise ConfigError(f"{source}: {key} {name!r} is declared twice")
            table[name] = value
        if table:
            data[key] = table


def read_builtin(name: str, studies: Sequence[Any]) -> Any:
    """The built-in spec ``name`` as data: the core's file and the sections ``studies``
    declare for it."""
    text = resources.files("iclab.experiments.specs").joinpath(f"{name}.toml").read_text()
    data = parse_text(text, f"{name}.toml", ".toml")
    for study in dependency_order(studies):
        for section in study.spec_sections():
            if not isinstance(section, SpecSection) or section.spec not in BUILTIN_SPECS:
                raise ConfigError(f"study {study.name!r}: spec_sections must be SpecSection "
                                  f"objects naming one of {', '.join(BUILTIN_SPECS)}")
            if section.spec == name:
                source = f"study {study.name}: {section.path.name}"
                _merge(data, parse_text(section.path.read_text(), source, ".toml"), source)
    return data


def _reader(studies: Sequence[Any]) -> Any:
    def read_base(reference: str, source: str) -> tuple[Any, str]:
        """The spec ``reference`` names: a file beside ``source``, else a built-in spec."""
        beside = Path(source).parent / reference
        if beside.is_file():
            return read_spec_file(beside), str(beside)
        name = Path(reference).stem
        if reference in (f"{name}.toml", name) and name in BUILTIN_SPECS:
            return read_builtin(name, studies), f"{name}.toml"
        raise ConfigError(f"{source}: extends {reference!r}: no such spec beside it, and no "
                          f"built-in spec of that name ({', '.join(BUILTIN_SPECS)})")

    return read_base


def load_spec(path: str | Path, registries: SpecRegistries) -> Spec:
    """Load and validate a spec file (.toml or .json), resolving ``extends`` (a built-in base
    with the command's studies' sections)."""
    path = Path(path)
    data = resolve_extends(read_spec_file(path), str(path), _reader(registries.studies))
    return parse_spec(data, str(path), registries)


def builtin_spec(name: str, registries: SpecRegistries) -> Spec:
    """One of the specs shipped with iclab (BUILTIN_SPECS), with the command's studies'
    sections."""
    if name not in BUILTIN_SPECS:
        raise ConfigError(f"unknown built-in spec {name!r}; allowed: {', '.join(BUILTIN_SPECS)}")
    data = resolve_extends(read_builtin(name, registries.studies), f"{name}.toml",
                           _reader(registries.studies))
    return parse_spec(data, f"{name}.toml", registries)
