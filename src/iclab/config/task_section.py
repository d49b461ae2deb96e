"""The task section of a run's config for one family: the core's keys (``TaskConfig``: d, n,
sigma, family) and the options the family declares, with those of its extensions, as one
frozen dataclass (so they are checked, parsed, listed as ``iclab train`` options and written to
config.json exactly like the fixed sections' fields).

An option keeps its name, unless the run's model has an option of the same name: the family's
key is then qualified with its ``short`` name (two-layer-relu's ``width`` beside the
transformer's ``width`` is ``relu_width``). The flat JSON form also keeps iclab 0.1's keys
``cov_x``, ``cov_w`` and ``width``, written as null where the family (or the model) has no
such option (``LEGACY_NULL_KEYS``), so config files and hashes of earlier runs stay the same.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Iterable
from typing import Any

from iclab.config.sections import TaskConfig
from iclab.tasks.registry import FamilyRegistry
from iclab.utils.fields import field_infos

LEGACY_NULL_KEYS = ("cov_x", "cov_w", "width")
"""Keys every config of iclab 0.1 held (null unless the family used them)."""


@functools.cache
def _section_class(family: str, owners: tuple[type, ...], prefix: str,
                   qualified: frozenset[str]) -> type[TaskConfig]:
    """The dataclass of the core's task keys and the options of ``owners`` (``qualified``
    names prefixed with ``prefix``); one class per distinct declaration, so that configs made
    twice compare equal."""
    fields: list[tuple[str, Any, Any]] = []
    keys: dict[str, str] = {}
    for owner in owners:
        hints = typing.get_type_hints(owner)
        for name, (f, _) in field_infos(owner).items():
            key = f"{prefix}_{name}" if name in qualified else name
            keys[key] = name
            fields.append((key, hints[name], dataclasses.field(
                default=f.default, metadata=f.metadata)))
    cls = dataclasses.make_dataclass(f"TaskConfig_{family.replace('-', '_')}", fields,
                                     bases=(TaskConfig,), frozen=True)
    section = typing.cast(type[TaskConfig], cls)
    section.option_keys = keys
    return section


def task_section(families: FamilyRegistry, family: str,
                 model_options: Iterable[str] = ()) -> type[TaskConfig]:
    """The task section of ``family`` (its options and its extensions') beside a model whose
    options are named ``model_options``."""
    entry = families.entry(family)
    owners = families.option_owners(family)
    names = {name for owner in owners for name in field_infos(owner)}
    core = set(field_infos(TaskConfig))
    clash = core & names
    if clash:
        raise TypeError(f"family {family!r} declares options {sorted(clash)}, which are the "
                        f"core's task keys")
    return _section_class(family, owners, entry.prefix, frozenset(names & set(model_options)))


def option_values(task: TaskConfig) -> dict[str, Any]:
    """The family's (and its extensions') option values of a task section, by option name."""
    return {name: getattr(task, key) for key, name in type(task).option_keys.items()}
