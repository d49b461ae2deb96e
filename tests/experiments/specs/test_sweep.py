"""Sweeps: run folders by config hash, skipping finished runs, parallel workers, kill and resume."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from iclab.experiments.executors.local import LocalExecutor, RunOutcome, RunTask, execute_run
from iclab.experiments.registries import Registries
from iclab.experiments.specs.builtin import load_spec
from iclab.experiments.specs.results import RESULT_COLUMNS, load_records
from iclab.experiments.specs.spec import parse_spec
from iclab.experiments.specs.sweep import SweepError, failure_message, make_executor, run_sweep
from iclab.utils.errors import ConfigError
from iclab.utils.io import read_json

TINY = {"name": "tiny", "defaults": {"d": 2, "steps": 30, "batch": 64, "eval_prompts": 200,
                                     "log_every": 10, "checkpoint_every": 10},
        "groups": [{"name": "a", "seeds": [0, 1], "n": [4, 8], "sigma": 0.5}]}


class Recording:
    """An executor that runs tasks in this process and remembers which."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def run(self, tasks: Sequence[RunTask], on_done: Callable[[RunOutcome], None]) -> None:
        for task in tasks:
            self.seen.append(task.run_id)
            on_done(execute_run(task))


def test_each_point_is_a_run_folder_named_by_its_config_hash(tmp_path: Path) -> None:
    spec = parse_spec(TINY, "tiny", Registries())
    executor = Recording()
    records = run_sweep(spec, tmp_path, executor, progress=False)
    assert sorted(executor.seen) == sorted(p.run_id for p in spec.points())
    for point in spec.points():
        folder = tmp_path / "runs" / point.run_id
        assert read_json(folder / "config.json") == point.config.to_json()
        assert records[point.run_id].result == read_json(folder / "result.json")
    lines = (tmp_path / "results.csv").read_text().splitlines()
    assert len(lines) == 1 + 4
    assert lines[0].split(",")[:2] == ["run", "groups"]
    assert "wall_seconds" not in lines[0] and set(RESULT_COLUMNS) <= set(lines[0].split(","))
    assert [line.split(",")[0] for line in lines[1:]] == [p.run_id for p in spec.points()]
    assert "wall_seconds" in (tmp_path / "timings.csv").read_text().splitlines()[0]
    again = Recording()
    run_sweep(spec, tmp_path, again, progress=False)
    assert again.seen == []  # finished runs are skipped
    first, second = (tmp_path / "runs" / p.run_id for p in list(spec.points())[:2])
    (first / "result.json").write_bytes((second / "result.json").read_bytes())
    with pytest.raises(ConfigError, match=r"config\.json was edited"):  # another run's result
        load_records(spec, tmp_path)
    unfinished = tmp_path / "runs" / list(spec.points())[3].run_id
    (unfinished / "result.json").unlink()   # one run to redo: refused before it is redone
    refused = Recording()
    with pytest.raises(ConfigError, match=r"config\.json was edited"):
        run_sweep(spec, tmp_path, refused, progress=False)
    assert refused.seen == [] and not (unfinished / "result.json").exists()


def test_results_do_not_depend_on_the_executor_or_workers(tmp_path: Path) -> None:
    spec = parse_spec({**TINY, "defaults": {**TINY["defaults"], "steps": 10}}, "tiny", Registries())
    run_sweep(spec, tmp_path / "here", Recording(), progress=False)
    run_sweep(spec, tmp_path / "two", LocalExecutor(2), progress=False)
    assert (tmp_path / "here" / "results.csv").read_bytes() == \
        (tmp_path / "two" / "results.csv").read_bytes()


def timings_threads(folder: Path) -> list[str]:
    """The threads column of ``folder``'s timings.csv, read back by name."""
    with open(folder / "timings.csv", newline="") as file:
        return [row["threads"] for row in csv.DictReader(file)]


def test_timings_record_each_workers_threads_and_results_do_not_change(tmp_path: Path) -> None:
    spec = parse_spec({**TINY, "defaults": {**TINY["defaults"], "steps": 10}}, "tiny", Registries())
    run_sweep(spec, tmp_path / "one", Recording(), progress=False)  # in process: one thread
    run_sweep(spec, tmp_path / "two", LocalExecutor(1, threads=2), progress=False)
    assert timings_threads(tmp_path / "one") == ["1"] * 4
    assert timings_threads(tmp_path / "two") == ["2"] * 4
    assert (tmp_path / "one" / "results.csv").read_bytes() == \
        (tmp_path / "two" / "results.csv").read_bytes()


def test_a_failing_run_is_reported_and_the_others_finish(tmp_path: Path) -> None:
    data: dict[str, Any] = {**TINY, "groups": [
        {"name": "ok", "n": 4, "sigma": 0.5},
        {"name": "diverges", "n": 4, "sigma": 0.5, "lr": 1e6, "init_scale": 10.0}]}
    spec = parse_spec(data, "t", Registries())
    with pytest.raises(SweepError, match=r"1 of 2 runs failed.*run the same command again"):
        run_sweep(spec, tmp_path, Recording(), progress=False)
    ok = spec.group("ok").points[0].run_id
    assert (tmp_path / "runs" / ok / "result.json").exists()


def test_make_executor_validates_its_arguments() -> None:
    with pytest.raises(ConfigError, match="executor must be one of local, ray, slurm"):
        make_executor("kubernetes")
    with pytest.raises(ConfigError, match="--address applies only to --executor ray"):
        make_executor("local", address="auto")
    with pytest.raises(ConfigError, match="workers must be an integer >= 1"):
        make_executor("local", workers=0)


def test_ray_missing_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail
    with pytest.raises(ConfigError, match=r"pip install 'iclab\[ray\]'"):
        make_executor("ray")


KILL_SPEC = """name = "kill"
[defaults]
d = 3
steps = 200
batch = 128
eval_prompts = 2000
checkpoint_every = 20
[[groups]]
name = "a"
seeds = [0, 1]
n = [4, 8]
sigma = 0.5
"""


def _sweep(spec: Path, out: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "iclab.cli.main", "sweep", str(spec), "--out", str(out),
               "--quiet", "--workers", "2"]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_killed_with_sigkill_and_run_again_gives_identical_results(tmp_path: Path) -> None:
    spec = tmp_path / "kill.toml"
    spec.write_text(KILL_SPEC)
    process = _sweep(spec, tmp_path / "killed")
    runs = tmp_path / "killed" / "runs"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until some checkpoints, not all results, exist
        if list(runs.glob("*/checkpoint.safetensors")):
            break
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert len(list(runs.glob("*/result.json"))) < 4
    # resume
    run_sweep(load_spec(spec, Registries()), tmp_path / "killed", Recording(), progress=False)
    run_sweep(load_spec(spec, Registries()), tmp_path / "clean", Recording(), progress=False)
    assert (tmp_path / "killed" / "results.csv").read_bytes() == \
        (tmp_path / "clean" / "results.csv").read_bytes()


class Unreachable:
    """An executor that cannot start (a cluster that does not answer)."""

    def run(self, tasks: Sequence[RunTask], on_done: Callable[[RunOutcome], None]) -> None:
        raise ConfigError("cannot reach the cluster")


def test_a_sweep_that_cannot_start_creates_no_folder(tmp_path: Path) -> None:
    spec = parse_spec(TINY, "tiny", Registries())
    with pytest.raises(ConfigError, match="cannot reach the cluster"):
        run_sweep(spec, tmp_path / "a" / "out", Unreachable(), progress=False)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        run_sweep(spec, tmp_path / "file" / "out", Recording(), progress=False)
    with pytest.raises(ConfigError, match="exists and is not a folder"):
        run_sweep(spec, tmp_path / "file", Recording(), progress=False)


def test_the_failure_message_names_the_failed_runs() -> None:
    failures = [RunOutcome(f"run{i}", f"Error {i}", 0.0) for i in range(7)]
    assert failure_message(failures[:2], 9) == (
        "2 of 9 runs failed (run0, run1; first error: Error 0); run the same command again "
        "to retry them, finished runs are kept")
    assert "(run0, run1, run2, run3, run4 and 2 more; first error: Error 0)" in \
        failure_message(failures, 9)
