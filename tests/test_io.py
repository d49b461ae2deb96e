from pathlib import Path

import pytest

from iclab.utils.errors import NotFiniteError
from iclab.utils.io import atomic_write, atomic_write_json, csv_text, read_json, write_files


def test_atomic_write_json_round_trips(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "x.json"
    atomic_write_json(target, {"a": [1, 2.5], "b": None})
    assert read_json(target) == {"a": [1, 2.5], "b": None}
    assert [p.name for p in target.parent.iterdir()] == ["x.json"]


def test_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    atomic_write_json(target, {"old": True})

    def broken(tmp: Path) -> None:
        tmp.write_text("{half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(target, broken)
    assert read_json(target) == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_json_with_a_non_finite_number_is_never_written(tmp_path: Path, bad: float) -> None:
    target = tmp_path / "x.json"
    atomic_write_json(target, {"old": True})
    with pytest.raises(NotFiniteError, match=r"x\.json: a number to be written is not finite"):
        atomic_write_json(target, {"rows": [{"loss": 1.0}, {"loss": bad}]})
    assert read_json(target) == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_csv_text_keeps_every_key_and_exact_floats() -> None:
    rows = [{"k": 0, "a": 0.1, "b": None}, {"k": 1, "a": 1 / 3, "c": "x"}]
    lines = csv_text(rows).splitlines()
    assert lines[0] == "k,a,b,c"
    assert lines[1] == "0,0.1,,"
    assert lines[2] == f"1,{1 / 3!r},,'x'"
    assert float(lines[2].split(",")[1]) == 1 / 3
    assert csv_text([]) == "\n"


def test_write_files_is_all_or_none(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "deeper"
    write_files(folder, [("a.txt", "text"), ("b.png", b"\x89PNG")])
    assert (folder / "a.txt").read_text() == "text"
    assert (folder / "b.png").read_bytes() == b"\x89PNG"
    (folder / "c.json").mkdir()  # the third name cannot be written: a folder stands there
    with pytest.raises(OSError):
        write_files(folder, [("a.txt", "new"), ("d.csv", "x"), ("c.json", "{}")])
    assert not (folder / "d.csv").exists()          # what the failed call created is gone
    assert (folder / "a.txt").read_text() == "new"  # a replaced file holds a whole content
    fresh = tmp_path / "fresh" / "sub"
    (tmp_path / "blocker").mkdir()
    with pytest.raises(OSError):
        write_files(fresh, [("a.txt", "x"), ("../../blocker", "y")])
    assert not (tmp_path / "fresh").exists()        # and the folders it made
