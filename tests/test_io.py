from pathlib import Path

import pytest

from iclab.io import atomic_write, atomic_write_json, read_json


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
