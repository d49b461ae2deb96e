"""A Ray task's work, run in this process: files identical to a local run, resume points used."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from iclab import __version__
from iclab.experiments.executors.checkpoint_storage import CheckpointStorage
from iclab.experiments.executors.local import RunTask, execute_run
from iclab.experiments.executors.remote_run import RemoteRun, run_remote
from iclab.experiments.executors.run_files import (
    CHECKPOINT,
    RESUME_FILES,
    checkpoint_step,
    read_run_files,
)
from iclab.experiments.registries import Registries
from iclab.experiments.specs.spec import parse_spec

TINY = {"name": "tiny", "defaults": {"d": 2, "steps": 600, "batch": 64, "eval_prompts": 500,
                                     "log_every": 50, "checkpoint_every": 100},
        "groups": [{"name": "a", "n": 4, "sigma": 0.5}]}


def tiny_point() -> tuple[str, dict[str, Any]]:
    point = parse_spec(TINY, "tiny", Registries()).points()[0]
    return point.run_id, point.config.to_json()


@pytest.fixture(scope="module")
def local_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The files the local executor writes for the tiny run."""
    run_id, config = tiny_point()
    folder = tmp_path_factory.mktemp("local") / run_id
    outcome = execute_run(RunTask(run_id, config, str(folder), str(folder) + ".lock"))
    assert outcome.error is None
    return read_run_files(folder)


@pytest.fixture(scope="module")
def partial_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The resume files of the tiny run trained in a subprocess and killed (SIGKILL) after
    its first checkpoints."""
    _, config = tiny_point()
    tmp_path = tmp_path_factory.mktemp("killed")
    folder = tmp_path / "run"
    (tmp_path / "config.json").write_text(json.dumps(config))
    code = ("import json, sys; from iclab.experiments.executors.local import train_run; "
            "train_run(json.load(open(sys.argv[1])), sys.argv[2])")
    process = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "config.json"),
                                str(folder)])
    deadline = time.monotonic() + 120
    while not (folder / CHECKPOINT).exists() and time.monotonic() < deadline:
        time.sleep(0.002)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert not (folder / "result.json").exists()
    return {name: (folder / name).read_bytes() for name in RESUME_FILES}


def without_wall_time(result: bytes) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result)
    data.pop("wall_seconds")
    data.pop("cpu_seconds")
    return data


def assert_same_run(remote: dict[str, bytes], local: dict[str, bytes]) -> None:
    assert sorted(remote) == sorted(local)
    for name in ("config.json", "metrics.jsonl", "model.safetensors"):
        assert remote[name] == local[name], name
    assert without_wall_time(remote["result.json"]) == without_wall_time(local["result.json"])


def test_a_remote_run_returns_the_local_executors_files(local_files: dict[str, bytes]) -> None:
    run_id, config = tiny_point()
    result = run_remote(RemoteRun(run_id, config))
    assert result.error is None and result.resumed_from == 0 and result.warning is None
    assert_same_run(result.files, local_files)


def test_a_node_with_another_iclab_version_refuses_to_train() -> None:
    run_id, config = tiny_point()
    result = run_remote(RemoteRun(run_id, config, version="0.0.0-other"))
    assert result.files == {}
    assert result.error == (f"this node runs iclab {__version__} and the driver iclab "
                            "0.0.0-other: install the same version on every node")


def test_a_failing_run_returns_its_error_and_files_so_far() -> None:
    run_id, config = tiny_point()
    result = run_remote(RemoteRun(run_id, {**config, "lr": 1e6, "init_scale": 10.0}))
    assert result.error is not None and result.error.startswith("TrainingDivergedError")
    assert "config.json" in result.files and "result.json" not in result.files


def _marked(metrics: bytes) -> bytes:
    lines = [json.loads(line) for line in metrics.decode().splitlines() if line.strip()]
    return "".join(json.dumps({**line, "mark": 1}) + "\n" for line in lines).encode()


@pytest.mark.parametrize("source", ["storage", "driver"])
def test_a_killed_run_resumes_from_its_checkpoint_with_identical_results(
        tmp_path: Path, source: str, partial_files: dict[str, bytes],
        local_files: dict[str, bytes]) -> None:
    run_id, config = tiny_point()
    completed = checkpoint_step(partial_files)
    assert 0 < completed < config["steps"]
    # the metric lines it had written are marked, so the resumed run shows which it kept
    files = {**partial_files, "metrics.jsonl": _marked(partial_files["metrics.jsonl"])}
    if source == "storage":
        storage = str(tmp_path / "store")
        CheckpointStorage(storage).save(run_id, files)
        task = RemoteRun(run_id, config, storage=storage)
    else:
        task = RemoteRun(run_id, config, resume=files)
    result = run_remote(task)
    assert result.error is None and result.resumed_from == completed
    lines = [json.loads(line) for line in result.files["metrics.jsonl"].decode().splitlines()]
    assert [line["step"] for line in lines] == list(range(50, config["steps"] + 1, 50))
    assert [line["step"] for line in lines if "mark" in line] == \
        list(range(50, completed + 1, 50))
    resumed = {**result.files, "metrics.jsonl": "".join(
        json.dumps({k: v for k, v in line.items() if k != "mark"}) + "\n"
        for line in lines).encode()}
    assert_same_run(resumed, local_files)


def test_the_furthest_checkpoint_wins(tmp_path: Path, partial_files: dict[str, bytes],
                                      local_files: dict[str, bytes]) -> None:
    run_id, config = tiny_point()
    final = {name: local_files[name] for name in RESUME_FILES}  # checkpoint at the last step
    assert checkpoint_step(final) == config["steps"] > checkpoint_step(partial_files)
    storage = CheckpointStorage(str(tmp_path / "store"))
    for stored, handed in ((final, partial_files), (partial_files, final)):
        storage.save(run_id, stored)
        result = run_remote(RemoteRun(run_id, config, resume=handed, storage=storage.uri))
        assert result.error is None and result.resumed_from == config["steps"]
        assert_same_run(result.files, local_files)
        storage.remove(run_id)
