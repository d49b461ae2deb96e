"""A spec's ``[[claims]]`` tables, checked against the claim kinds the caller hands in.

The spec loader knows claim kinds only through ``ClaimKinds`` (anything with ``get(name)``
returning a ``ClaimKindSchema``): the command's ``ClaimRegistry``
(``iclab.experiments.claims.registry``), built-ins plus the user's plug-ins, so a kind
registered there, or named in the spec as ``MODULE:CLASS`` / ``file.py:CLASS``, is checked
here exactly as a built-in one. A kind may need measurements of each run beyond result.json
(``RunMeasurement``, the shifted test laws of the ``shift`` kind, say): they travel in the
``ClaimSpec`` and the sweep makes them after training (``iclab.experiments.specs.sweep``), so
checking a claim only reads files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from iclab.models.registry import ModelRegistry
from iclab.tasks.registry import FamilyRegistry
from iclab.utils.errors import ConfigError
from iclab.utils.plugins import error_line, is_builtin_code

CLAIM_KEYS = ("section", "kind", "group", "tolerance", "statement", "separation", "source")
"""The keys every claim may set; a kind adds its options and parameters."""


@runtime_checkable
class RunMeasurement(Protocol):
    """A measurement a claim needs from every run of its group beyond result.json, written
    into the run's folder by the sweep and read back by the claim."""

    def is_done(self, run_folder: Path) -> bool:
        """Whether ``run_folder`` already holds this measurement."""

    def measure(self, run_folder: Path) -> None:
        """Make the measurement on the finished run in ``run_folder`` and write it there."""


class ClaimKindSchema(Protocol):
    """What the spec loader asks of a claim kind (``iclab.experiments.claims.kind``)."""

    @property
    def options(self) -> Mapping[str, tuple[str, ...]]:
        """Option -> allowed values (the first the default)."""

    @property
    def parameters(self) -> Mapping[str, Any]:
        """Declared parameters by key (``ClaimParameter``)."""

    def validate_parameters(self, raw: dict[str, Any], where: str) -> dict[str, Any]:
        """The checked parameters of a claim's raw table."""

    def check_groups(self, parameters: dict[str, Any], group: str, groups: set[str],
                     where: str) -> None:
        """Checks of the parameters against the spec's group names."""

    def measurements(self, parameters: dict[str, Any]) -> tuple[RunMeasurement, ...]:
        """The measurements each run of the claim's group needs (none for most kinds)."""

    def unmet(self, spec: ClaimSpec, config: Any, task: Any) -> str | None:
        """What the claim needs of the run of ``config`` (a TrainConfig; ``task`` its family)
        that the run lacks, in words; None when the claim can judge it."""


class MeasuringKind(Protocol):
    """What the spec loader asks of a kind that makes ``[[measurements]]`` tables."""

    @property
    def name(self) -> str:
        """The kind's name."""

    def parse_measurement(self, table: dict[str, Any], where: str) -> dict[str, Any]:
        """The checked parameters of a table's own keys (``section`` and ``groups`` taken
        out); ConfigError, one line starting with ``where``, on a bad or unknown key."""

    def measurements(self, parameters: dict[str, Any]) -> tuple[RunMeasurement, ...]:
        """What each run of the table's groups is measured on."""


class ClaimKinds(Protocol):
    """Claim kinds by name (a ``ClaimRegistry``)."""

    def get(self, name: str) -> ClaimKindSchema:
        """The kind called ``name``; ConfigError naming the allowed kinds otherwise."""

    def measuring_kinds(self) -> Mapping[str, MeasuringKind]:
        """measurement_key -> the kind that makes ``[[measurements]]`` tables with it."""


class SpecRegistries(Protocol):
    """The registries a spec is read with: the command's ``Registries``
    (``iclab.experiments.registries``)."""

    @property
    def models(self) -> ModelRegistry:
        """The models a group may name."""

    @property
    def families(self) -> FamilyRegistry:
        """The families a group may name."""

    @property
    def studies(self) -> Sequence[Any]:
        """The studies whose sections join a built-in spec (``Study.spec_sections``)."""

    @property
    def claims(self) -> ClaimKinds:
        """The claim kinds a claim may name."""


@dataclass(frozen=True)
class ClaimSpec:
    """A claim to check on ``group``'s results: kind, tolerance, kind-specific options (strings)
    and parameters (any type the kind declares, checked), and the measurements of each run
    the kind needs beyond result.json. ``group`` is "" for a kind without runs
    (``ClaimKind.needs_runs`` false: it computes from its parameters)."""

    section: str
    kind: str
    group: str
    tolerance: float
    options: dict[str, str]
    statement: str | None = None
    separation: float = 5.0
    parameters: dict[str, Any] = field(default_factory=dict)
    measurements: tuple[RunMeasurement, ...] = ()
    source: str = ""
    """Where the claim comes from: a theorem, a cited result, a section of docs/theory.md."""


def _fail(where: str, message: str) -> ConfigError:
    return ConfigError(f"{where}: {message}")


def parse_claim(raw: Any, index: int, groups: set[str], source: str,
                kinds: ClaimKinds) -> ClaimSpec:
    """The checked claim ``claims[index]`` of spec ``source``; ConfigError, one line naming
    the claim, on a bad key or value."""
    where = f"{source}: claims[{index}]"
    if not isinstance(raw, dict):
        raise _fail(where, "a claim must be a table")
    kind = str(raw.get("kind"))
    try:
        claim_kind = kinds.get(kind)
    except ConfigError as error:
        raise _fail(where, str(error)) from None
    options = claim_kind.options
    unknown = sorted(set(raw) - set(CLAIM_KEYS) - set(options) - set(claim_kind.parameters))
    if unknown:
        raise _fail(where, f"unknown keys {unknown} for kind {kind}")
    runless = "group" not in raw and not getattr(claim_kind, "needs_runs", True)
    if raw.get("group") not in groups and not runless:
        raise _fail(where, f"group must be one of {sorted(groups)}; got {raw.get('group')!r}")
    section = raw.get("section", "Claims")
    statement, claim_source = raw.get("statement"), raw.get("source", "")
    if not isinstance(section, str) or not (statement is None or isinstance(statement, str)) \
            or not isinstance(claim_source, str):
        raise _fail(where, "section, statement and source must be strings")
    numbers = {}
    for key, default in (("tolerance", None), ("separation", 5.0)):
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or not (
                0 <= value < 1e6 and (value > 0 or key == "separation")):  # separation may be 0
            wanted = "a positive number" if key == "tolerance" else "a number >= 0"
            raise _fail(where, f"{key} must be {wanted}, got {value!r}")
        numbers[key] = float(value)
    chosen = {}
    for key, allowed in options.items():
        value = raw.get(key, allowed[0])
        if value not in allowed:
            raise _fail(where, f"{key} must be one of {', '.join(allowed)}; got {value!r}")
        chosen[key] = value
    parameters, measurements = _kind_parameters(claim_kind, raw, groups, f"{where} (kind "
                                                                         f"{kind})")
    return ClaimSpec(section=section, kind=kind, group=raw.get("group", ""),
                     tolerance=numbers["tolerance"], options=chosen, statement=statement,
                     separation=numbers["separation"], parameters=parameters,
                     measurements=measurements, source=claim_source.strip())


def _kind_parameters(claim_kind: ClaimKindSchema, raw: dict[str, Any], groups: set[str],
                     where: str) -> tuple[dict[str, Any], tuple[RunMeasurement, ...]]:
    """The kind's checked parameters and its measurements; a user's kind whose
    validate_parameters, check_groups or measurements raises (or returns the wrong type) is
    one ConfigError line."""
    builtin = is_builtin_code(type(claim_kind))
    try:
        parameters = claim_kind.validate_parameters(raw, where)
        claim_kind.check_groups(parameters, raw.get("group", ""), groups, where)
        measurements = claim_kind.measurements(parameters)
    except ConfigError:
        raise
    except (Exception, SystemExit) as error:  # a user's kind: one line, not a traceback
        if builtin:
            raise
        raise _fail(where, f"the kind's parameters failed ({error_line(error)})") from None
    if not builtin and not (isinstance(parameters, dict) and isinstance(measurements, tuple)
                            and all(isinstance(m, RunMeasurement) and callable(m.is_done)
                                    and callable(m.measure) for m in measurements)):
        raise _fail(where, "validate_parameters must return a dict and measurements a tuple "
                           "of RunMeasurement objects (is_done, measure)")
    return parameters, measurements
