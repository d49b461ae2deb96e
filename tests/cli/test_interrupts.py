"""Ctrl-C (SIGINT) and SIGTERM on a real ``iclab`` process: at start-up and while training,
one line and exit code 130 (143 for SIGTERM), no traceback, no temporary file left behind, and
the same command run again resumes and finishes. A sweep stops its workers at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TRAIN = ["train", "--d", "3", "--n", "6", "--sigma", "0.5", "--steps", "4000", "--batch",
         "256", "--checkpoint-every", "100", "--log-every", "10", "--eval-prompts", "2000",
         "--quiet"]


def _as_in_a_terminal() -> None:
    """A background job inherits Ctrl-C ignored (and Python then keeps it so); a command
    typed in a terminal does not."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(argv: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen([sys.executable, "-m", "iclab.cli.main", *argv], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_as_in_a_terminal)


def wait_for(path: Path, process: subprocess.Popen[str], limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def finish(process: subprocess.Popen[str]) -> tuple[int, list[str]]:
    _, err = process.communicate(timeout=120)
    return process.returncode, [line for line in err.splitlines() if line.strip()]


def leftovers(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.name.endswith(".tmp"))


@pytest.mark.parametrize(("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"),
                                                   (signal.SIGTERM, 143, "terminated")])
def test_a_signal_at_start_up_is_one_line(tmp_path: Path, sig: signal.Signals, code: int,
                                          word: str) -> None:
    process = start([*TRAIN, "--out", "run"], tmp_path)
    time.sleep(0.3)           # the interpreter is up (its handlers installed), iclab importing
    process.send_signal(sig)
    returncode, lines = finish(process)
    assert returncode == code, lines
    assert lines == [f"iclab: error: {word}; run the same command again to resume"]


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_training_leaves_a_resumable_run(tmp_path: Path, sig: signal.Signals,
                                                        code: int) -> None:
    run = tmp_path / "run"
    process = start([*TRAIN, "--out", "run"], tmp_path)
    wait_for(run / "checkpoint.safetensors", process)
    process.send_signal(sig)
    returncode, lines = finish(process)
    assert returncode == code and len(lines) == 1 and "run the same command again" in lines[0]
    assert not any("Traceback" in line for line in lines)
    assert leftovers(tmp_path) == [] and not (run / "result.json").exists()
    resumed = start([*TRAIN, "--out", "run"], tmp_path)
    assert finish(resumed)[0] == 0
    assert (run / "result.json").is_file() and leftovers(tmp_path) == []


SPEC = """[defaults]
d = 3
steps = 20000
batch = 256
checkpoint_every = 50
eval_prompts = 2000
[[groups]]
name = "g"
seeds = [0, 1, 2]
n = [4, 8]
sigma = 0.5
"""


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")
            if p.is_file()}


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_sweep_stops_its_workers(tmp_path: Path, sig: signal.Signals) -> None:
    (tmp_path / "spec.toml").write_text(SPEC)
    process = start(["sweep", "spec.toml", "--out", "sw", "--quiet", "--workers", "2"],
                    tmp_path)
    deadline = time.monotonic() + 300
    while not list((tmp_path / "sw" / "runs").glob("*/checkpoint.safetensors")):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(sig)
    returncode, lines = finish(process)
    assert returncode == (130 if sig == signal.SIGINT else 143)
    assert len(lines) == 1 and "run the same command again to resume" in lines[0]
    before = snapshot(tmp_path / "sw")
    time.sleep(3)                                    # a worker still running would write
    assert snapshot(tmp_path / "sw") == before
    assert leftovers(tmp_path) == []
    assert len(list((tmp_path / "sw" / "runs").glob("*/result.json"))) < 6


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


@pytest.mark.slow
def test_a_worker_killed_from_outside_is_a_failed_run_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "spec.toml").write_text(SPEC.replace("steps = 20000", "steps = 1500"))
    argv = ["sweep", "spec.toml", "--out", "sw", "--quiet", "--workers", "2"]
    process = start(argv, tmp_path)
    deadline = time.monotonic() + 300
    while not list((tmp_path / "sw" / "runs").glob("*/checkpoint.safetensors")):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    workers = [pid for pid in children(process.pid)
               if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
               and b"resource_tracker" not in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert workers
    os.kill(workers[0], signal.SIGKILL)              # the OOM killer, say
    returncode, lines = finish(process)
    assert returncode == 1 and lines[-1].startswith("iclab: error: ")
    assert "worker process died" in lines[-1] and "run the same command again" in lines[-1]
    assert not any("Traceback" in line for line in lines)
    assert finish(start(argv, tmp_path))[0] == 0      # and the sweep finishes when run again
