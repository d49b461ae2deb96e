"""The ``[[measurements]]`` of a spec, checked: what to measure where no theory makes a claim.

A table names its ``section``, the ``groups`` shown side by side, a ``shift`` (any but sigma,
whose Bayes loss can be 0) and its ``values`` (with the training value: 1 for the scales, 0 for
w-mean), and optionally ``prompts`` (per value, default 20,000) and ``seed`` (of the shifted
prompts, default 0). ``iclab.experiments.measurements`` evaluates and reports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from iclab.errors import ConfigError
from iclab.experiments.claim_parameters import integer, number_list
from iclab.runs.shift import MAX_PROMPTS
from iclab.tasks.shifted import SHIFT_KINDS, TRAINING_VALUE, check_value

DEFAULT_PROMPTS = 20_000
"""Fresh prompts per shifted value, for shift claims and measurements alike."""
RATIO_KINDS = tuple(kind for kind in SHIFT_KINDS if kind != "sigma")
"""The shifts whose Bayes loss stays positive at every value (sigma = 0 makes it 0)."""

KEYS = ("section", "groups", "shift", "values", "prompts", "seed")
HEADING = "Measurements (not claims)"


@dataclass(frozen=True)
class MeasurementSpec:
    """One measurement: the groups shown side by side under one shift."""

    section: str
    groups: tuple[str, ...]
    shift: str
    values: tuple[float, ...]
    prompts: int = DEFAULT_PROMPTS
    seed: int = 0

    @property
    def parameters(self) -> dict[str, Any]:
        """The shift evaluation's parameters, as a shift claim gives them."""
        return {"shift": self.shift, "values": self.values, "prompts": self.prompts,
                "seed": self.seed}


def parse_measurements(raw: Any, groups: set[str], source: str) -> tuple[MeasurementSpec, ...]:
    """The checked ``[[measurements]]`` of a spec; ConfigError naming the table and key."""
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
            values = tuple(check_value(kind, v) for v in number_list(2, 50)(table.get("values")))
            prompts = integer(100, MAX_PROMPTS)(table.get("prompts", DEFAULT_PROMPTS))
            seed = integer(0, 2**62)(table.get("seed", 0))
        except ConfigError as error:
            raise ConfigError(f"{where}: {error}") from None
        fixed = TRAINING_VALUE.get(kind)
        if fixed is not None and fixed not in values:
            raise ConfigError(f"{where}: values must include the training value {fixed:g}")
        out.append(MeasurementSpec(section, tuple(names), kind, values, prompts, seed))
    return tuple(out)
