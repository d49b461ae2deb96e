"""Where a shift claim's measurement lives and how it is read: the run's shift folder
(``runs/<run_id>/shift-<shift>-<hash of values, prompts, seed>/``, made by the sweep through
``ShiftMeasurement`` and reused when its shift.json and shift.png match), the training value
a growth is read against, and the checks of a claim's or a measurement table's values."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iclab.experiments.claims.kind import ClaimContext
from iclab.experiments.claims.parameters import ClaimParameter, integer
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.results import RunRecord, run_dir
from iclab.studies.shift.laws import (
    SHIFT_KINDS,
    TRAINING_VALUE,
    check_includes_training_value,
    check_value,
)
from iclab.studies.shift.run import MAX_PROMPTS, shift_run
from iclab.utils.errors import ConfigError
from iclab.utils.io import read_json

DEFAULT_PROMPTS = 20_000
"""Fresh prompts per shifted value, for shift claims and measurements alike."""
PROMPT_PARAMETERS = {
    "prompts": ClaimParameter("fresh prompts per value", integer(100, MAX_PROMPTS),
                              default=DEFAULT_PROMPTS),
    "seed": ClaimParameter("the seed of the shifted prompts", integer(0, 2**62), default=0),
}
"""The parameters every shift claim shares: how many shifted prompts, from which seed."""
RATIO_KINDS = tuple(kind for kind in SHIFT_KINDS if kind != "sigma")
"""The shifts whose Bayes loss stays positive at every value (sigma = 0 makes it 0)."""


def training_value(kind: str, config: dict[str, Any]) -> float:
    """The value of ``kind`` that gives back the training law of a run (its JSON config)."""
    if kind in TRAINING_VALUE:
        return TRAINING_VALUE[kind]
    return float(config["n"] if kind == "n" else config["sigma"])


def checked_values(kind: str, values: Any, where: str,
                   with_training_value: bool) -> tuple[float | int, ...]:
    """A shift claim's ``values`` as the kind uses them (``check_value``), which must also hold
    the training value where ``with_training_value`` (a ratio is read against it); else
    ConfigError naming the claim (``where``)."""
    try:
        checked = tuple(check_value(kind, v) for v in values)
    except ConfigError as error:
        raise ConfigError(f"{where}: values must suit shift {kind}: {error}") from None
    if with_training_value:
        try:
            check_includes_training_value(kind, checked)
        except ConfigError as error:
            raise ConfigError(f"{where}: {error}") from None
    return checked


def shift_folder(run_folder: Path, parameters: dict[str, Any]) -> Path:
    """runs/<run_id>/shift-<kind>-<8 hex digits of the values, prompts and seed>."""
    key = json.dumps({"values": [float(v) for v in parameters["values"]],
                      "prompts": parameters["prompts"], "seed": parameters["seed"]},
                     sort_keys=True)
    digest = hashlib.blake2b(key.encode(), digest_size=4).hexdigest()
    return Path(run_folder) / f"shift-{parameters['shift']}-{digest}"


def _matches(data: Any, parameters: dict[str, Any]) -> bool:
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        return False
    try:
        values = [float(row["value"]) for row in data["rows"]]
    except (TypeError, ValueError, KeyError):
        return False
    return (data.get("kind") == parameters["shift"] and data.get("prompts") ==
            parameters["prompts"] and data.get("seed") == parameters["seed"]
            and values == [float(v) for v in parameters["values"]])


@dataclass(frozen=True)
class ShiftMeasurement:
    """The shift evaluation of a shift claim's ``parameters`` on one run (``RunMeasurement``):
    shift.json and shift.png in the run's shift folder."""

    parameters: dict[str, Any]

    def folder(self, run_folder: Path) -> Path:
        return shift_folder(run_folder, self.parameters)

    def is_done(self, run_folder: Path) -> bool:
        folder = self.folder(run_folder)
        if not ((folder / "shift.json").is_file() and (folder / "shift.png").is_file()):
            return False
        return _matches(read_json(folder / "shift.json"), self.parameters)

    def measure(self, run_folder: Path) -> None:
        values = ",".join(repr(float(v)) for v in self.parameters["values"])
        shift_run(run_folder, self.parameters["shift"], values, self.parameters["prompts"],
                  self.folder(run_folder), self.parameters["seed"])


def measured_shift(spec: ClaimSpec, record: RunRecord,
                   context: ClaimContext) -> tuple[Path, dict[str, Any]]:
    """The shift folder of ``record``'s run for this claim and its shift.json content (read
    once per context); ConfigError when the sweep has not measured it."""
    if context.out_dir is None:
        raise ConfigError(f"the shift claim on group {spec.group!r} needs the sweep folder "
                          "(evaluate_claims(..., out_dir=...))")
    run_folder = run_dir(context.out_dir, record.point.run_id)
    measurement = ShiftMeasurement(spec.parameters)
    folder = measurement.folder(run_folder)
    key = ("shift", str(folder))
    if key not in context.cache:
        if not measurement.is_done(run_folder):
            raise ConfigError(f"the shift claim on group {spec.group!r}: {folder} holds no "
                              "shift.json and shift.png of this claim's values, prompts and "
                              "seed; run the sweep again to measure them")
        context.cache[key] = read_json(folder / "shift.json")
    result: dict[str, Any] = context.cache[key]
    return folder, result
