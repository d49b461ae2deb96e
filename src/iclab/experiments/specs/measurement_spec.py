"""The ``[[measurements]]`` of a spec, checked: what to measure where no theory makes a claim.

A table names its ``section`` and the ``groups`` shown side by side; its other keys belong to
the claim kind that makes and reports it: the registered kind whose declared
``measurement_key`` the table holds (the shift study's ``shift`` kind measures ``shift =
"w-scale"`` with its ``values``, ``prompts`` and ``seed``). The kind checks those keys
(``parse_measurement``) and says what the sweep makes on every run of the groups after
training (``measurements``, its ``RunMeasurement``, as for a claim,
``iclab.experiments.specs.sweep.measure_runs``); the report asks the same kind for the table
and figure (``report_measurement``, ``iclab.experiments.report.write``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from iclab.experiments.specs.claim_spec import ClaimKinds, RunMeasurement
from iclab.utils.errors import ConfigError

COMMON_KEYS = ("section", "groups")
"""The keys of every ``[[measurements]]`` table; the measuring kind adds its own."""


@dataclass(frozen=True)
class MeasurementSpec:
    """One measurement: the groups shown side by side, measured by the claim kind ``kind``
    with its checked ``parameters``."""

    section: str
    groups: tuple[str, ...]
    kind: str
    parameters: dict[str, Any] = field(default_factory=dict)
    run_measurements: tuple[RunMeasurement, ...] = ()
    """What the sweep makes on every run of ``groups`` (the kind's measurements)."""


def parse_measurements(raw: Any, groups: set[str], source: str,
                       kinds: ClaimKinds) -> tuple[MeasurementSpec, ...]:
    """The checked ``[[measurements]]`` of a spec, each with its kind's run measurements;
    ConfigError naming the table and key."""
    if not isinstance(raw, list) or not all(isinstance(table, dict) for table in raw):
        raise ConfigError(f"{source}: measurements must be a list of tables ([[measurements]])")
    measuring = kinds.measuring_kinds()
    out = []
    for index, table in enumerate(raw):
        where = f"{source}: measurement {index + 1}"
        section, names = table.get("section"), table.get("groups")
        if not isinstance(section, str) or not section:
            raise ConfigError(f"{where}: section must be a non-empty string")
        if not isinstance(names, list) or not names or not all(n in groups for n in names):
            raise ConfigError(f"{where}: groups must list groups of the spec "
                              f"({', '.join(sorted(groups))}), got {names!r}")
        chosen = [key for key in measuring if key in table]
        if len(chosen) != 1:
            raise ConfigError(f"{where}: give exactly one of the keys "
                              f"{', '.join(measuring) or '(none: no kind makes measurements)'}"
                              f" (the measurement's kind); got keys {sorted(table)}")
        kind = measuring[chosen[0]]
        own = {key: value for key, value in table.items() if key not in COMMON_KEYS}
        parameters = kind.parse_measurement(own, where)
        out.append(MeasurementSpec(section, tuple(names), kind.name, parameters,
                                   kind.measurements(parameters)))
    return tuple(out)
