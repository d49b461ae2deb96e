"""A spec's groups expanded into points: every combination of the group's axes (the keys given
as lists) times its seeds, each a checked ``TrainConfig`` with its run id (the config's hash)
and the labels of its covariances; the keys a group may set come from the declarations (the
fixed sections, every family's task section beside every model, every model's options)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from itertools import product
from typing import Any

from iclab.config.sections import MODEL_KEY, section_fields
from iclab.config.task_section import task_section
from iclab.config.train import TrainConfig
from iclab.experiments.specs.covariances import resolve_covariance
from iclab.models.registry import ModelRegistry
from iclab.tasks.registry import FamilyRegistry
from iclab.utils.errors import ConfigError
from iclab.utils.fields import field_infos
from iclab.utils.plugins import is_plugin_reference

_COVARIANCE_FIELDS = ("cov_x", "cov_w", "context_covariance")
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
MAX_POINTS = 10_000
"""The most runs the groups of a spec may expand to, together."""


def fail(where: str, message: str) -> ConfigError:
    """One line: ``where``: ``message``."""
    return ConfigError(f"{where}: {message}")


def config_hash(config: TrainConfig) -> str:
    """16 hex digits identifying a run: a hash of its canonical JSON config."""
    return config.hash()


@dataclass(frozen=True)
class Point:
    """One run of a sweep: its config, folder name, the groups it belongs to, covariance labels
    (``context_covariance_label`` is "" where the positions are not given a covariance)."""

    config: TrainConfig
    run_id: str
    groups: tuple[str, ...]
    cov_x_label: str
    cov_w_label: str
    context_covariance_label: str = ""


@dataclass(frozen=True)
class GroupSpec:
    """A named grid of runs: its points in spec order (seeds innermost) and the swept axes."""

    name: str
    points: tuple[Point, ...]
    axes: tuple[str, ...]


def allowed_group_keys(models: ModelRegistry, model: Any = None,
                       families: FamilyRegistry | None = None) -> set[str]:
    """Every key a group (or ``[defaults]``) may set: the run's declared fields (the fixed
    sections and every registered family's task section beside every model), ``model``, the
    options of every registered model (of plug-in references, only the group's own
    ``model``), ``name`` and ``seeds`` (not ``seed``)."""
    families = families or FamilyRegistry()
    keys = {*section_fields(), MODEL_KEY, "name", "seeds"} - {"seed"}
    for name in models.names:
        if name == model or not is_plugin_reference(name):
            options = field_infos(models.get(name).options_class)
            keys |= set(options)
            for family in families.names:
                keys |= set(field_infos(task_section(families, family, options)))
    return keys


def expand_group(
    raw: Any, index: int, defaults: dict[str, Any], named: dict[str, Any], source: str,
    models: ModelRegistry, families: FamilyRegistry, budget: int = MAX_POINTS,
) -> GroupSpec:
    where = f"{source}: groups[{index}]"
    if not isinstance(raw, dict):
        raise fail(where, "a group must be a table")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise fail(where, f"name must be lower-case letters, digits and '-', got {name!r}")
    where = f"{source}: group {name!r}"
    model = raw.get(MODEL_KEY, defaults.get(MODEL_KEY))
    if isinstance(model, str) and is_plugin_reference(model) and model not in models.names:
        models.register(models.get(model), model)
    allowed = allowed_group_keys(models, model, families)
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise fail(where, f"unknown keys {unknown}; allowed: {sorted(allowed)}")
    seeds = raw.get("seeds", [0])
    if not isinstance(seeds, list) or not seeds or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds):
        raise fail(where, f"seeds must be a non-empty list of integers >= 0, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise fail(where, f"seeds repeat: {seeds}")
    settings = {**defaults, **{k: v for k, v in raw.items() if k not in ("name", "seeds")}}
    covariances = {f: resolve_covariance(settings.pop(f, None), named, f"{where}: {f}")
                   for f in _COVARIANCE_FIELDS}
    pool = settings.pop("task_pool", None)  # a (K, d) nested list; never an axis
    axes = [k for k, v in settings.items() if isinstance(v, list)]
    for axis in axes:
        if not settings[axis] or len(set(map(repr, settings[axis]))) != len(settings[axis]):
            raise fail(where, f"axis {axis} must list distinct values, got {settings[axis]!r}")
    count = len(seeds) * math.prod(len(settings[axis]) for axis in axes)
    if count > budget:
        raise fail(where, f"the group has {count} runs (axes {', '.join(axes) or 'none'} times "
                           f"{len(seeds)} seeds); a spec allows at most {MAX_POINTS} in all")
    points = []
    for values in product(*(settings[a] for a in axes)):
        for seed in seeds:
            data = {**settings, **dict(zip(axes, values, strict=True)), "seed": seed}
            for f, (matrix, _) in covariances.items():
                if matrix is not None:
                    data[f] = matrix.tolist()
            if pool is not None:
                data["task_pool"] = pool
            try:
                config = TrainConfig.from_json(data, models, families=families).validate(
                    families)
            except (ConfigError, TypeError) as error:
                raise fail(where, f"{error} (this installed iclab cannot run this group)") \
                    from None
            positions = covariances["context_covariance"]
            points.append(Point(config, config_hash(config), (name,),
                                covariances["cov_x"][1], covariances["cov_w"][1],
                                "" if positions[0] is None else positions[1]))
    return GroupSpec(name=name, points=tuple(points), axes=tuple(axes))
