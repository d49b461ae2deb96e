"""Theory values kept in the sweep folder (``StoredValues``): read back by a later report,
never read when the file is edited, damaged or made by other code, and kept in memory only
where there is no folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from iclab.experiments.claims.kind import ClaimContext
from iclab.experiments.claims.stored import FOLDER, StoredValues, code_digest
from iclab.theory.bayes import bayes_risk
from iclab.theory.sized_mean import mean_to_stderr

KEY = (3, 0.5, np.eye(3).tobytes(), 1000, 0)


class Counting:
    """A computation that counts its calls (its module's source binds the files)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, scale: float) -> tuple[float, float]:
        self.calls += 1
        return (scale * 1.0000000000000002, scale / 3)


def store(folder: Path | None) -> StoredValues[tuple[float, float]]:
    return StoredValues(folder, "test-values", Counting.__call__, list, tuple)


def fill(values: StoredValues[tuple[float, float]], compute: Counting) -> tuple[float, float]:
    if KEY not in values:
        values[KEY] = compute(2.0)
    return values[KEY]


def test_a_later_report_reads_the_value_back_bit_for_bit(tmp_path: Path) -> None:
    compute = Counting()
    first = fill(store(tmp_path), compute)
    second = fill(store(tmp_path), compute)
    assert compute.calls == 1 and second == first and isinstance(second, tuple)
    assert len(list((tmp_path / FOLDER).glob("test-values-*.json"))) == 1


def test_an_edited_value_is_computed_again_and_replaced(tmp_path: Path) -> None:
    compute = Counting()
    first = fill(store(tmp_path), compute)
    (path,) = (tmp_path / FOLDER).glob("*.json")
    data = json.loads(path.read_text())
    data["value"][0] = 99.0
    path.write_text(json.dumps(data))
    assert fill(store(tmp_path), compute) == first and compute.calls == 2
    assert json.loads(path.read_text())["value"][0] == first[0]


def test_damaged_files_and_other_code_are_not_read(tmp_path: Path) -> None:
    compute = Counting()
    fill(store(tmp_path), compute)
    (path,) = (tmp_path / FOLDER).glob("*.json")
    path.write_text("{not json")
    fill(store(tmp_path), compute)
    assert compute.calls == 2
    data = json.loads(path.read_text())
    data["code"] = "0" * 32  # written by another version of the code
    path.write_text(json.dumps(data))
    fill(store(tmp_path), compute)
    assert compute.calls == 3


def test_values_of_two_modules_code_are_bound_to_both(tmp_path: Path) -> None:
    """A value drawn by one module's rule (sized_mean) from another's draws (bayes) is not read
    back by a store bound to one of them only."""
    compute = Counting()
    both = StoredValues(tmp_path, "test-values", (bayes_risk, mean_to_stderr), list, tuple)
    if KEY not in both:
        both[KEY] = compute(2.0)
    assert code_digest((bayes_risk, mean_to_stderr)) not in (code_digest(bayes_risk),
                                                              code_digest(mean_to_stderr))
    again = StoredValues(tmp_path, "test-values", (bayes_risk, mean_to_stderr), list, tuple)
    one = StoredValues(tmp_path, "test-values", bayes_risk, list, tuple)
    assert KEY in again and KEY not in one


def test_another_key_with_the_same_file_name_is_not_read(tmp_path: Path) -> None:
    compute = Counting()
    values = store(tmp_path)
    fill(values, compute)
    path = values.path(KEY)
    assert path is not None
    other = (4, *KEY[1:])
    data: dict[str, Any] = json.loads(path.read_text())
    path.unlink()
    moved = values.path(other)
    assert moved is not None
    moved.write_text(json.dumps(data))  # KEY's record under other's name
    assert other not in store(tmp_path)


def test_without_a_folder_values_stay_in_memory(tmp_path: Path) -> None:
    compute = Counting()
    values = store(None)
    assert fill(values, compute) == fill(values, compute) and compute.calls == 1
    assert values.path(KEY) is None and not list(tmp_path.iterdir())


def test_claims_of_one_report_share_one_store_and_a_new_report_reads_the_files(
        tmp_path: Path) -> None:
    context = ClaimContext(out_dir=tmp_path)
    values = context.stored("bayes-risk", bayes_risk, list, tuple)
    assert context.stored("bayes-risk", bayes_risk, list, tuple) is values
    risk = bayes_risk(3, 0.5, np.eye(3), np.eye(3), prompts=2000, seed=0)
    values[KEY] = risk
    again = ClaimContext(out_dir=tmp_path).stored("bayes-risk", bayes_risk, list, tuple)
    assert again[KEY] == risk
