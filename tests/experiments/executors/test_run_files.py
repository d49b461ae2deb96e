"""Run folders as bytes: read back what was written, result.json last, paths kept inside."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from safetensors.torch import save_file

from iclab.experiments.executors.run_files import (
    CHECKPOINT,
    checkpoint_step,
    read_run_files,
    resume_files,
    write_run_files,
)
from iclab.utils.errors import ConfigError

NAME = st.text(string.ascii_lowercase + string.digits + "_-", min_size=1, max_size=8)


@given(st.dictionaries(st.lists(NAME, min_size=1, max_size=3).map("/".join),
                       st.binary(max_size=64), min_size=1, max_size=5))
def test_written_files_read_back_identically(files: dict[str, bytes]) -> None:
    import tempfile

    names = set(files)
    if any(other.startswith(name + "/") for name in names for other in names):
        return  # a name cannot be both a file and a folder
    with tempfile.TemporaryDirectory() as folder:
        write_run_files(Path(folder) / "run", files)
        assert read_run_files(Path(folder) / "run") == files


@pytest.mark.parametrize("name", ["../escape", "/etc/passwd", "a/../../b", "", "..", ".",
                                  "a//b", "./a"])
def test_a_name_leaving_the_folder_is_refused_before_writing(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match="relative path inside its folder"):
        write_run_files(tmp_path / "run", {"config.json": b"{}", name: b"x"})
    assert not (tmp_path / "run").exists()


def test_result_json_is_written_last(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import iclab.experiments.executors.run_files as run_files

    order: list[str] = []
    original = run_files.atomic_write
    monkeypatch.setattr(run_files, "atomic_write",
                        lambda path, write: (order.append(Path(path).name), original(path, write)))
    write_run_files(tmp_path, {"result.json": b"{}", "z.bin": b"1", "config.json": b"{}"})
    assert order[-1] == "result.json" and sorted(order) == ["config.json", "result.json", "z.bin"]


def test_temporary_files_are_not_read(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(b"{}")
    (tmp_path / ".result.json.x.tmp").write_bytes(b"half")
    assert read_run_files(tmp_path) == {"config.json": b"{}"}


def test_resume_files_only_for_an_unfinished_run(tmp_path: Path) -> None:
    assert resume_files(tmp_path / "missing") == {}
    run = tmp_path / "run"
    files = {"config.json": b"{}", "metrics.jsonl": b"{}\n", CHECKPOINT: b"ck",
             "model.safetensors": b"m"}
    write_run_files(run, files)
    assert resume_files(run) == {k: v for k, v in files.items() if k != "model.safetensors"}
    write_run_files(run, {"result.json": b"{}"})
    assert resume_files(run) == {}


def test_checkpoint_step_reads_what_safetensors_wrote(tmp_path: Path) -> None:
    for step in (0, 7, 12345):
        path = tmp_path / f"{step}.safetensors"
        save_file({"w": torch.zeros(3, 2), "v": torch.ones(5)}, str(path),
                  metadata={"format": "x", "step": str(step), "other": "1"})
        assert checkpoint_step({CHECKPOINT: path.read_bytes()}) == step
    assert checkpoint_step({}) == 0
    assert checkpoint_step({CHECKPOINT: b"\x05\x00\x00\x00\x00\x00\x00\x00{bad"}) == 0
    save_file({"w": torch.zeros(1)}, str(tmp_path / "none.safetensors"))
    assert checkpoint_step({CHECKPOINT: (tmp_path / "none.safetensors").read_bytes()}) == 0
