"""Slow: the issue's Theorem 1 verdict with default settings, and SIGKILL-then-resume."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _iclab(*args: str) -> list[str]:
    return [sys.executable, "-m", "iclab.cli.main", *args]


@pytest.mark.parametrize("sigma", ["0", "0.5", "1"])
def test_default_training_learns_theorem_1(tmp_path: Path, sigma: str) -> None:
    out = tmp_path / "run"
    subprocess.run(_iclab("train", "--d", "5", "--n", "20", "--sigma", sigma, "--seed", "0",
                          "--quiet", "--out", str(out)), check=True, capture_output=True)
    result = json.loads((out / "result.json").read_text())
    assert result["eta_rel_err"] < 0.01
    assert result["isotropy_err"] < 0.02
    assert abs(result["test_loss"] - result["loss_star"]) < 4 * result["test_loss_stderr"] + 0.01


def test_sigkill_after_first_checkpoint_then_resume_is_exact(tmp_path: Path) -> None:
    args = ["train", "--d", "5", "--n", "20", "--sigma", "0.5", "--seed", "1", "--steps", "4000",
            "--quiet"]
    clean = tmp_path / "clean"
    subprocess.run(_iclab(*args, "--out", str(clean)), check=True, capture_output=True)
    killed = tmp_path / "killed"
    process = subprocess.Popen(_iclab(*args, "--out", str(killed)), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (killed / "checkpoint.safetensors").exists():
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.01)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert not (killed / "result.json").exists()
    subprocess.run(_iclab(*args, "--out", str(killed)), check=True, capture_output=True)
    a = json.loads((clean / "result.json").read_text())
    b = json.loads((killed / "result.json").read_text())
    assert a["eta_hat"] == b["eta_hat"]
    assert a["test_loss"] == b["test_loss"]
