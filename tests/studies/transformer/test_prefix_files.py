"""The prefix files are named by the run folder's contract and removed on --restart."""

from __future__ import annotations

from pathlib import Path

from iclab.training.run_folder import PREFIX_FILES, RunFolder


def test_restart_removes_the_prefix_files(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    assert [p.name for p in folder.prefix_files] == list(PREFIX_FILES) == [
        "prefix.json", "prefix.csv", "prefix.png"]
    for path in folder.prefix_files:
        path.write_text("x")
    folder.config.write_text("{}")
    folder.remove_run_files()
    assert not any(path.exists() for path in folder.prefix_files)
    assert folder.config.exists()
