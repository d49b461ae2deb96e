"""Mid-run checkpoints on fsspec storage: URIs checked on the driver, files stored whole."""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path
from typing import Any

import pytest

from iclab.experiments.executors.checkpoint_storage import (
    CheckpointMirror,
    CheckpointStorage,
    resolve_storage,
)
from iclab.experiments.executors.run_files import CHECKPOINT, write_run_files
from iclab.utils.errors import ConfigError

FILES = {"config.json": b'{"d": 2}', "metrics.jsonl": b'{"step": 10}\n', CHECKPOINT: b"ck-10"}


def test_a_relative_folder_is_made_absolute_on_the_driver(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_storage("store") == str(tmp_path / "store")
    assert resolve_storage("file://sub/store") == str(tmp_path / "sub" / "store")
    assert resolve_storage("memory://bucket/x") == "memory://bucket/x"


def test_unknown_or_missing_file_systems_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown protocol 'nope'"):
        resolve_storage("nope://bucket/x")
    with pytest.raises(ConfigError, match="must be a URI or a folder"):
        resolve_storage("  ")
    if importlib.util.find_spec("s3fs") is None:
        with pytest.raises(ConfigError, match="the 's3' file system is not installed"):
            resolve_storage("s3://bucket/x")


@pytest.mark.parametrize("kind", ["folder", "memory"])
def test_save_load_remove(tmp_path: Path, kind: str) -> None:
    uri = str(tmp_path / "store") if kind == "folder" else f"memory://{tmp_path.name}/store"
    storage = CheckpointStorage(uri)
    assert storage.load("abc") == {}
    storage.save("abc", FILES)
    assert storage.load("abc") == FILES
    storage.save("abc", {**FILES, CHECKPOINT: b"ck-20"})
    assert storage.load("abc")[CHECKPOINT] == b"ck-20"
    assert storage.load("other") == {}
    if kind == "folder":  # no temporary file is left behind
        assert sorted(os.listdir(tmp_path / "store" / "runs" / "abc")) == sorted(FILES)
    storage.remove("abc")
    assert storage.load("abc") == {}
    storage.remove("abc")  # removing nothing is fine


def test_files_without_a_config_and_a_checkpoint_are_no_resume_point(tmp_path: Path) -> None:
    storage = CheckpointStorage(str(tmp_path))
    storage.save("abc", {"config.json": b"{}"})
    assert storage.load("abc") == {}
    storage.save("def", {CHECKPOINT: b"ck"})
    assert storage.load("def") == {}


def test_the_mirror_stores_each_new_checkpoint_once(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    storage = CheckpointStorage(str(tmp_path / "store"))
    mirror = CheckpointMirror(storage, "abc", folder)
    assert mirror.sync() is False  # nothing yet
    write_run_files(folder, {CHECKPOINT: FILES[CHECKPOINT]})
    assert mirror.sync() is False  # no config yet: not a run to resume
    write_run_files(folder, FILES)
    assert mirror.sync() is True
    assert storage.load("abc") == FILES
    assert mirror.sync() is False  # unchanged
    newer = {**FILES, "metrics.jsonl": FILES["metrics.jsonl"] + b'{"step": 20}\n',
             CHECKPOINT: b"ck-20"}
    write_run_files(folder, newer)
    assert mirror.sync() is True
    assert storage.load("abc") == newer
    assert mirror.error is None


def test_the_mirror_thread_stores_while_open(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    storage = CheckpointStorage(str(tmp_path / "store"))
    with CheckpointMirror(storage, "abc", folder, poll=0.01):
        for name in ("config.json", "metrics.jsonl", CHECKPOINT):  # the training loop's order
            write_run_files(folder, {name: FILES[name]})
        deadline = time.monotonic() + 30
        while storage.load("abc") != FILES and time.monotonic() < deadline:
            time.sleep(0.01)
    assert storage.load("abc") == FILES


class Broken(CheckpointStorage):
    def save(self, run_id: str, files: Any) -> None:
        raise PermissionError("read-only bucket")


def test_a_storage_failure_is_kept_not_raised(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    write_run_files(folder, FILES)
    mirror = CheckpointMirror(Broken(str(tmp_path / "store")), "abc", folder)
    assert mirror.sync() is False
    assert mirror.error == "PermissionError: read-only bucket"
