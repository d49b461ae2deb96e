import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from iclab.cli.main import main

FAST = ["--steps", "40", "--batch", "128", "--eval-prompts", "1000", "--quiet"]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--d", "5", "--n", "20", "--sigma", "-1"], "sigma must be a finite number >= 0"),
        (["--d", "5", "--n", "0", "--sigma", "0.5"],
         "n must be an integer >= 1 and <= 1000000, got 0"),
        (["--d", "0", "--n", "20", "--sigma", "0.5"],
         "d must be an integer >= 1 and <= 4096, got 0"),
        (["--d", "5", "--n", "20", "--sigma", "0.5", "--frobnicate"], "No such option"),
        (["--d", "five", "--n", "20", "--sigma", "0.5"], "'five' is not a valid integer"),
        (["--d", "5", "--n", "20", "--sigma", "0.5", "--device", "tpu"], "device must be one of"),
        (["--d", "5", "--n", "20", "--sigma", "0.5", "--lr", "-1"], "lr must be"),
        (["--n", "20", "--sigma", "0.5"], "Missing option '--d'"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], fragment: str
) -> None:
    out = tmp_path / "run"
    assert main(["train", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert fragment in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


def test_bad_covariance_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "asym.npy"
    np.save(bad, np.array([[1.0, 0.3], [0.0, 1.0]]))
    out = tmp_path / "run"
    code = main(["train", "--d", "2", "--n", "5", "--sigma", "0", "--cov-x", str(bad),
                 "--out", str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert "asym.npy" in err and "not symmetric" in err and err.count("\n") == 1
    assert not out.exists()


def test_a_real_process_prints_no_traceback(tmp_path: Path) -> None:
    out = tmp_path / "run"
    completed = subprocess.run(
        [sys.executable, "-m", "iclab.cli.main", "train", "--d", "5", "--n", "20", "--sigma",
         "-1", "--out", str(out)], capture_output=True, text=True, check=False,
    )
    assert completed.returncode == 2
    assert completed.stderr.strip().splitlines() == [
        "iclab: error: sigma must be a finite number >= 0 and <= 10000, got -1.0"
    ]
    assert not out.exists()


def test_train_writes_the_run_and_prints_a_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cov = tmp_path / "cov.npy"
    np.save(cov, np.diag([1.0, 2.0, 0.5]))
    out = tmp_path / "run"
    code = main(["train", "--d", "3", "--n", "8", "--sigma", "0.5", "--cov-x", str(cov), *FAST,
                 "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "eta_hat" in printed and "optimal loss L*" in printed
    assert "step GD" not in printed and "standard errors from L*)" in printed
    config = json.loads((out / "config.json").read_text())
    assert config["cov_x"] == [[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 0.5]]
    assert config["steps"] == 40
    result = json.loads((out / "result.json").read_text())
    assert result["gamma_star_isotropic"] is False


def test_an_l_layer_run_prints_its_comparison_with_the_optimal_l_step_gd(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The table follows the depth the model declares (layers = 2): the optimal 2-step GD
    loss and steps, the learned layer steps, and a verdict against the L-step GD loss."""
    out = tmp_path / "run"
    code = main(["train", "--layers", "2", "--parameterisation", "sparse", "--d", "3", "--n",
                 "5", *FAST, "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    result = json.loads((out / "result.json").read_text())
    assert re.search(rf"optimal 2-step GD loss +{result['gd_steps_loss']:.5f}\n", printed)
    assert "learned layer steps (sorted)" in printed and "eta_hat" not in printed
    assert "standard errors from the optimal L-step GD loss)" in printed
