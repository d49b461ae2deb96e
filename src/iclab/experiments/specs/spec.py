"""Declarative experiment specs: a TOML (or JSON) file of groups of runs and the claims on them.

Schema (every key but ``groups`` is optional)::

    name = "my-sweep"                 # used in the report's title
    description = "..."               # a paragraph for the report
    [defaults]                        # TrainConfig fields shared by every group
    d = 5
    steps = 500
    [covariances]                     # named covariance expressions (see below)
    S = [[2.0, 0.5], [0.5, 1.0]]
    [sections]                        # report section name -> explanatory paragraph
    "Theorem 1" = "..."
    [[groups]]                        # one group = a grid of runs
    name = "theorem1-sigma"           # lower-case letters, digits, '-'
    seeds = [0, 1]                    # default [0]
    n = 10                            # any TrainConfig field; a list is a swept axis
    sigma = [0.0, 0.5, 1.0]
    cov_x = "S"                       # covariance expression; never an axis
    x_law = ["gaussian", "uniform"]   # the linear family's covariate law (an axis here)
    context_covariance = "R"          # (n+1, n+1) expression, like cov_x; never an axis
    task_pool = [[1.0, 0.5]]          # a (K, d) task pool (linear-gaussian); never an axis
    [[claims]]                        # a verdict computed from a group's results
    section = "Theorem 1"
    kind = "eta"                      # see iclab.experiments.claims.theorems
    group = "theorem1-sigma"
    tolerance = 0.02
    source = "Mahankali et al., Theorem 1"  # where the claim comes from (shown, in claims.json)
    reference = "theorem1"            # kind-specific option
    [[claims]]                        # a kind may declare parameters of any type
    kind = "shift"
    group = "my-group"
    shift = "x-scale"
    values = [0.5, 1, 2, 4]
    measure = "ratio-grows"
    tolerance = 1000
    [[measurements]]                  # numbers shown without a verdict (measurement_spec)
    section = "Shift"
    groups = ["my-group", "other"]
    shift = "w-scale"
    values = [0.5, 1, 2, 4]

A group expands to the Cartesian product of its list-valued fields (in the order written),
each point once per seed. Covariance expressions: absent or null (identity), a name from
``[covariances]``, a (d, d) nested list, ``{diag = [...]}``, or ``{inverse = EXPR}``.
``context_covariance`` (the linear family's position covariance) takes the same expressions.
Every point becomes a TrainConfig, validated when the spec is loaded, and a run folder named
by the hash of that config; a config reached by several groups is one run.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from importlib import resources
from itertools import product
from pathlib import Path
from typing import Any

from iclab.config.sections import MODEL_KEY, section_fields
from iclab.config.task_section import task_section
from iclab.config.train import TrainConfig
from iclab.experiments.specs.claim_fit import check_claims_fit
from iclab.experiments.specs.claim_spec import ClaimSpec, SpecRegistries, parse_claim
from iclab.experiments.specs.covariances import resolve_covariance
from iclab.experiments.specs.extends import resolve_extends
from iclab.experiments.specs.measurement_spec import MeasurementSpec, parse_measurements
from iclab.experiments.specs.text import parse_text, read_spec_file
from iclab.models.registry import ModelRegistry
from iclab.tasks.registry import FamilyRegistry
from iclab.utils.errors import ConfigError
from iclab.utils.fields import field_infos
from iclab.utils.plugins import is_plugin_reference

BUILTIN_SPECS = ("reproduce", "reproduce-quick")
_SPEC_KEYS = ("name", "description", "defaults", "covariances", "sections", "groups", "claims",
              "measurements")
_COVARIANCE_FIELDS = ("cov_x", "cov_w", "context_covariance")
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
MAX_POINTS = 10_000
"""The most runs the groups of a spec may expand to, together."""


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


@dataclass(frozen=True)
class Spec:
    """A loaded, validated spec."""

    name: str
    description: str
    source: str
    groups: tuple[GroupSpec, ...]
    claims: tuple[ClaimSpec, ...]
    sections: dict[str, str]
    measurements: tuple[MeasurementSpec, ...] = ()

    def points(self) -> list[Point]:
        """Every distinct run once, in spec order, each listing all groups it belongs to."""
        order: dict[str, Point] = {}
        for group in self.groups:
            for point in group.points:
                known = order.get(point.run_id)
                if known is None:
                    order[point.run_id] = point
                elif group.name not in known.groups:
                    order[point.run_id] = replace(known, groups=(*known.groups, group.name))
        return list(order.values())

    def group(self, name: str) -> GroupSpec:
        for group in self.groups:
            if group.name == name:
                return group
        raise KeyError(name)


def _fail(where: str, message: str) -> ConfigError:
    return ConfigError(f"{where}: {message}")


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


def _expand_group(
    raw: Any, index: int, defaults: dict[str, Any], named: dict[str, Any], source: str,
    models: ModelRegistry, families: FamilyRegistry, budget: int = MAX_POINTS,
) -> GroupSpec:
    where = f"{source}: groups[{index}]"
    if not isinstance(raw, dict):
        raise _fail(where, "a group must be a table")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise _fail(where, f"name must be lower-case letters, digits and '-', got {name!r}")
    where = f"{source}: group {name!r}"
    model = raw.get(MODEL_KEY, defaults.get(MODEL_KEY))
    if isinstance(model, str) and is_plugin_reference(model) and model not in models.names:
        models.register(models.get(model), model)
    allowed = allowed_group_keys(models, model, families)
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise _fail(where, f"unknown keys {unknown}; allowed: {sorted(allowed)}")
    seeds = raw.get("seeds", [0])
    if not isinstance(seeds, list) or not seeds or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds):
        raise _fail(where, f"seeds must be a non-empty list of integers >= 0, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise _fail(where, f"seeds repeat: {seeds}")
    settings = {**defaults, **{k: v for k, v in raw.items() if k not in ("name", "seeds")}}
    covariances = {f: resolve_covariance(settings.pop(f, None), named, f"{where}: {f}")
                   for f in _COVARIANCE_FIELDS}
    pool = settings.pop("task_pool", None)  # a (K, d) nested list; never an axis
    axes = [k for k, v in settings.items() if isinstance(v, list)]
    for axis in axes:
        if not settings[axis] or len(set(map(repr, settings[axis]))) != len(settings[axis]):
            raise _fail(where, f"axis {axis} must list distinct values, got {settings[axis]!r}")
    count = len(seeds) * math.prod(len(settings[axis]) for axis in axes)
    if count > budget:
        raise _fail(where, f"the group has {count} runs (axes {', '.join(axes) or 'none'} times "
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
                raise _fail(where, f"{error} (this installed iclab cannot run this group)") \
                    from None
            positions = covariances["context_covariance"]
            points.append(Point(config, config_hash(config), (name,),
                                covariances["cov_x"][1], covariances["cov_w"][1],
                                "" if positions[0] is None else positions[1]))
    return GroupSpec(name=name, points=tuple(points), axes=tuple(axes))


def _table(data: dict[str, Any], key: str, source: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise _fail(source, f"{key} must be a table")
    return value


def parse_spec(data: Any, source: str, registries: SpecRegistries) -> Spec:
    """Validate a spec's data (already parsed from TOML or JSON) and expand its groups; the
    models and claim kinds it may name are those of ``registries`` (the command's: built-ins
    and plug-ins; a plug-in a group names joins ``registries.models``)."""
    if not isinstance(data, dict):
        raise _fail(source, "a spec must be a table at the top level")
    unknown = sorted(set(data) - set(_SPEC_KEYS))
    if unknown:
        raise _fail(source, f"unknown keys {unknown}; allowed: {list(_SPEC_KEYS)}")
    defaults, named = _table(data, "defaults", source), _table(data, "covariances", source)
    sections = _table(data, "sections", source)
    if "seed" in defaults:
        raise _fail(source, "defaults: give seeds in each group (seeds = [...]), not seed")
    raw_groups = data.get("groups")
    if not isinstance(raw_groups, list) or not raw_groups:
        raise _fail(source, "groups must be a non-empty list of tables ([[groups]])")
    groups: list[GroupSpec] = []
    for index, raw_group in enumerate(raw_groups):
        budget = MAX_POINTS - sum(len(group.points) for group in groups)
        groups.append(_expand_group(raw_group, index, defaults, named, source,
                                    registries.models, registries.families, budget))
    names = [g.name for g in groups]
    if len(set(names)) != len(names):
        raise _fail(source, f"group names repeat: {names}")
    raw_claims = data.get("claims", [])
    if not isinstance(raw_claims, list):
        raise _fail(source, "claims must be a list of tables ([[claims]])")
    claims = [parse_claim(c, i, set(names), source, registries.claims)
              for i, c in enumerate(raw_claims)]
    check_claims_fit(claims, groups, registries.claims, source)  # before any run
    measurements = parse_measurements(data.get("measurements", []), set(names), source,
                                      registries.claims)
    return Spec(name=str(data.get("name", Path(source).stem)),
                description=str(data.get("description", "")), source=source,
                groups=tuple(groups), claims=tuple(claims),
                sections={str(k): str(v) for k, v in sections.items()},
                measurements=measurements)


def _read_builtin(name: str) -> Any:
    text = resources.files("iclab.experiments.specs").joinpath(f"{name}.toml").read_text()
    return parse_text(text, f"{name}.toml", ".toml")


def _read_base(reference: str, source: str) -> tuple[Any, str]:
    """The spec ``reference`` names: a file beside ``source``, else a built-in spec."""
    beside = Path(source).parent / reference
    if beside.is_file():
        return read_spec_file(beside), str(beside)
    name = Path(reference).stem
    if reference in (f"{name}.toml", name) and name in BUILTIN_SPECS:
        return _read_builtin(name), f"{name}.toml"
    raise ConfigError(f"{source}: extends {reference!r}: no such spec beside it, and no "
                      f"built-in spec of that name ({', '.join(BUILTIN_SPECS)})")


def load_spec(path: str | Path, registries: SpecRegistries) -> Spec:
    """Load and validate a spec file (.toml or .json), resolving ``extends``."""
    path = Path(path)
    data = resolve_extends(read_spec_file(path), str(path), _read_base)
    return parse_spec(data, str(path), registries)


def builtin_spec(name: str, registries: SpecRegistries) -> Spec:
    """One of the specs shipped with iclab (BUILTIN_SPECS)."""
    if name not in BUILTIN_SPECS:
        raise ConfigError(f"unknown built-in spec {name!r}; allowed: {', '.join(BUILTIN_SPECS)}")
    data = resolve_extends(_read_builtin(name), f"{name}.toml", _read_base)
    return parse_spec(data, f"{name}.toml", registries)
