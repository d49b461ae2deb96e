"""The SLURM executor through submitit's local executor (jobs as processes on this machine):
the same results.csv as the local executor, byte for byte; finished runs skipped and an
interrupted one resumed as the local executor does; its options refused with the others."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from iclab.cli.main import main
from iclab.experiments.executors.local import RunOutcome, RunTask, execute_run
from iclab.experiments.executors.slurm_executor import LOG_FOLDER, SlurmExecutor
from iclab.experiments.registries import Registries
from iclab.experiments.specs.spec import parse_spec
from iclab.experiments.specs.sweep import make_executor, run_sweep
from iclab.utils.errors import ConfigError

TINY = {"name": "tiny", "defaults": {"d": 2, "steps": 20, "batch": 64, "eval_prompts": 200},
        "groups": [{"name": "a", "seeds": [0, 1], "n": [4, 8], "sigma": 0.5}]}


class InProcess:
    """The local executor's work, in this process (no worker start-up)."""

    def run(self, tasks: list[RunTask], on_done: Any) -> None:
        for task in tasks:
            on_done(execute_run(task, 1))


class Counting:
    """An executor that records the runs it is handed, then runs them as ``inner`` does."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.handed: list[str] = []

    def run(self, tasks: list[RunTask], on_done: Any) -> None:
        self.handed += [task.run_id for task in tasks]
        self.inner.run(tasks, on_done)


def test_submitit_local_jobs_match_the_local_executor_and_resume(tmp_path: Path) -> None:
    pytest.importorskip("submitit")
    spec = parse_spec(TINY, "tiny", Registries())
    run_sweep(spec, tmp_path / "local", InProcess(), progress=False)
    slurm = Counting(make_executor("slurm", slurm={"cluster": "local"}))
    run_sweep(spec, tmp_path / "slurm", slurm, progress=False)
    expected = (tmp_path / "local" / "results.csv").read_bytes()
    assert (tmp_path / "slurm" / "results.csv").read_bytes() == expected
    assert len(slurm.handed) == 4 and (tmp_path / "slurm" / LOG_FOLDER).is_dir()

    # A run interrupted after its last checkpoint: only it is submitted again, it resumes
    # there in place, and the sweep ends with the same results.
    run = tmp_path / "slurm" / "runs" / slurm.handed[0]
    (run / "result.json").unlink()
    (run / "model.safetensors").unlink()
    again = Counting(make_executor("slurm", slurm={"cluster": "local"}))
    run_sweep(spec, tmp_path / "slurm", again, progress=False)
    assert again.handed == [slurm.handed[0]]
    assert (tmp_path / "slurm" / "results.csv").read_bytes() == expected

    finished = Counting(make_executor("slurm", slurm={"cluster": "local"}))
    run_sweep(spec, tmp_path / "slurm", finished, progress=False)
    assert finished.handed == []


def test_the_command_line_runs_the_sweep_as_slurm_jobs(tmp_path: Path) -> None:
    pytest.importorskip("submitit")
    spec_file = tmp_path / "tiny.json"
    spec_file.write_text(json.dumps(TINY))
    args = ["sweep", str(spec_file), "--quiet"]
    assert main([*args, "--out", str(tmp_path / "local"), "--workers", "1"]) == 0
    assert main([*args, "--out", str(tmp_path / "slurm"), "--executor", "slurm",
                 "--cluster", "debug", "--partition", "cpu", "--time", "5", "--mem", "1",
                 "--array-parallelism", "2"]) == 0
    assert (tmp_path / "slurm" / "results.csv").read_bytes() == \
        (tmp_path / "local" / "results.csv").read_bytes()


@pytest.mark.parametrize(("args", "line"), [
    (["--partition", "cpu"], "--partition applies only to --executor slurm"),
    (["--array-parallelism", "2"], "--array-parallelism applies only to --executor slurm"),
    (["--executor", "ray", "--time", "5"], "--time applies only to --executor slurm"),
    (["--executor", "slurm", "--workers", "2"], "--workers applies to --executor local and "
                                                "ray; with --executor slurm"),
    (["--executor", "slurm", "--address", "auto"], "--address applies only to --executor ray"),
    (["--executor", "slurm", "--cpus", "0"], "--cpus must be an integer >= 1, got 0"),
    (["--executor", "slurm", "--time", "0"], "--time must be an integer >= 1, got 0"),
])
def test_options_are_refused_in_one_line_before_any_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], line: str) -> None:
    if "slurm" in args:
        pytest.importorskip("submitit")
    spec_file = tmp_path / "tiny.json"
    spec_file.write_text(json.dumps(TINY))
    out = tmp_path / "out"
    assert main(["sweep", str(spec_file), "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert line in err and err.count("\n") == 1
    assert not out.exists()


def test_missing_submitit_is_one_line_naming_the_extra(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "submitit", None)  # as if submitit were not installed
    spec_file = tmp_path / "tiny.json"
    spec_file.write_text(json.dumps(TINY))
    out = tmp_path / "out"
    assert main(["sweep", str(spec_file), "--out", str(out), "--executor", "slurm"]) == 2
    assert capsys.readouterr().err == ("iclab: error: --executor slurm needs submitit, which "
                                       "is not installed: pip install 'iclab[slurm]'\n")
    assert not out.exists()


def test_one_cpu_per_job_unless_asked() -> None:
    pytest.importorskip("submitit")
    default = SlurmExecutor()
    assert (default.cpus, default.threads) == (1, 1)
    assert default.parameters() == {"name": "iclab", "timeout_min": 60, "cpus_per_task": 1,
                                    "slurm_array_parallelism": 256}
    threads = SlurmExecutor(threads=3)
    assert (threads.cpus, threads.threads) == (3, 3)
    cpus = SlurmExecutor(options={"cpus": 4, "mem": 2, "partition": "long"})
    assert (cpus.cpus, cpus.threads) == (4, 4)
    assert cpus.parameters()["mem_gb"] == 2 and cpus.parameters()["slurm_partition"] == "long"
    assert SlurmExecutor(threads=1, options={"cpus": 2}).threads == 1
    with pytest.raises(ConfigError, match="--cluster must be one of slurm, local, debug"):
        SlurmExecutor(options={"cluster": "k8s"})


def test_a_failed_job_is_a_failed_run_naming_its_log() -> None:
    pytest.importorskip("submitit")

    class Broken:
        job_id = "7"

        class paths:  # noqa: N801 - submitit's attribute name
            stderr = Path("OUT/slurm/7_0_log.err")

        def result(self) -> RunOutcome:
            raise RuntimeError("Job 7 (task: 0) with path ... has not produced any output "
                               "(state: TIMEOUT)\nmore")

    task = RunTask("abc", {}, "OUT/runs/abc", "OUT/runs/.locks/abc.lock")
    outcome = SlurmExecutor()._outcome(Broken(), task)
    assert outcome.run_id == "abc"
    assert outcome.error is not None and outcome.error.startswith("SLURM job 7: Job 7 (task: 0)")
    assert outcome.error.endswith("(log: OUT/slurm/7_0_log.err)")
