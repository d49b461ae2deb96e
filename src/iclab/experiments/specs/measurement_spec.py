"""The ``[[measurements]]`` of a spec, checked: what to measure where no theory makes a claim.

A table names its ``section``, the ``groups`` shown side by side, a ``shift`` (any but sigma,
whose Bayes loss can be 0) and its ``values`` (with the training value: 1 for the scales, 0 for
w-mean), and optionally ``prompts`` (per value, default 20,000) and ``seed`` (of the shifted
prompts, default 0). The evaluation of each run is the ``shift`` claim kind's measurement
(``ClaimKindSchema.measurements``), made by the sweep after training like a claim's
(``iclab.experiments.specs.sweep.measure_runs``); ``iclab.experiments.report.measurements``
reads and reports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from iclab.experiments.specs.claim_spec import ClaimKinds, RunMeasurement
from iclab.runs.shift import MAX_PROMPTS
from iclab.tasks.shifted import SHIFT_KINDS, check_includes_training_value, check_value
from iclab.utils.errors import ConfigError

DEFAULT_PROMPTS = 20_000
"""Fresh prompts per shifted value, for shift claims and measurements alike."""
RATIO_KINDS = tuple(kind for kind in SHIFT_KINDS if kind != "sigma")
"""The shifts whose Bayes loss stays positive at every value (sigma = 0 makes it 0)."""

KEYS = ("section", "groups", "shift", "values", "prompts", "seed")


@dataclass(frozen=True)
class MeasurementSpec:
    """One measurement: the groups shown side by side under one shift."""

    section: str
    groups: tuple[str, ...]
    shift: str
    values: tuple[float, ...]
    prompts: int = DEFAULT_PROMPTS
    seed: int = 0
    run_measurements: tuple[RunMeasurement, ...] = ()
    """What the sweep makes on every run of ``groups`` (the shift kind's evaluation)."""

    @property
    def parameters(self) -> dict[str, Any]:
        """The shift evaluation's parameters, as a shift claim gives them."""
        return {"shift": self.shift, "values": self.values, "prompts": self.prompts,
                "seed": self.seed}


def _integer(value: Any, low: int, high: int, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{key} must be an integer from {low} to {high}, got {value!r}")
    return value


def _values(value: Any, kind: str) -> tuple[float, ...]:
    if not isinstance(value, list) or not 2 <= len(value) <= 50 or any(
            isinstance(v, bool) or not isinstance(v, int | float) for v in value):
        raise ConfigError(f"values must be a list of 2 to 50 numbers, got {value!r}")
    checked = tuple(check_value(kind, v) for v in value)
    if len({float(v) for v in checked}) != len(checked):
        raise ConfigError(f"values must list distinct numbers, got {value!r}")
    return checked


def parse_measurements(raw: Any, groups: set[str], source: str,
                       kinds: ClaimKinds) -> tuple[MeasurementSpec, ...]:
    """The checked ``[[measurements]]`` of a spec, each with the ``shift`` kind's run
    measurement (from ``kinds``); ConfigError naming the table and key."""
    if not isinstance(raw, list) or not all(isinstance(table, dict) for table in raw):
        raise ConfigError(f"{source}: measurements must be a list of tables ([[measurements]])")
    out = []
    for index, table in enumerate(raw):
        where = f"{source}: measurement {index + 1}"
        unknown = sorted(set(table) - set(KEYS))
        if unknown:
            raise ConfigError(f"{where}: unknown keys {unknown}; allowed: {list(KEYS)}")
        section, names, kind = table.get("section"), table.get("groups"), table.get("shift")
        if not isinstance(section, str) or not section:
            raise ConfigError(f"{where}: section must be a non-empty string")
        if not isinstance(names, list) or not names or not all(n in groups for n in names):
            raise ConfigError(f"{where}: groups must list groups of the spec "
                              f"({', '.join(sorted(groups))}), got {names!r}")
        if kind not in RATIO_KINDS:
            raise ConfigError(f"{where}: shift must be one of {', '.join(RATIO_KINDS)}, got "
                              f"{kind!r}")
        try:
            values = _values(table.get("values"), kind)
            prompts = _integer(table.get("prompts", DEFAULT_PROMPTS), 100, MAX_PROMPTS,
                               "prompts")
            seed = _integer(table.get("seed", 0), 0, 2**62, "seed")
        except ConfigError as error:
            raise ConfigError(f"{where}: {error}") from None
        try:
            check_includes_training_value(kind, values)
        except ConfigError as error:
            raise ConfigError(f"{where}: {error}") from None
        measurement = MeasurementSpec(section, tuple(names), kind, values, prompts, seed)
        out.append(MeasurementSpec(section, tuple(names), kind, values, prompts, seed,
                                   kinds.get("shift").measurements(measurement.parameters)))
    return tuple(out)
