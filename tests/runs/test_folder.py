"""Run folders under faults: a foreign or damaged checkpoint, a damaged result, divergence, a
corrected rerun. Each refusal is one line with exit code 2 (1 for divergence) and leaves no
result.json; each has its accepted counterpart."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from iclab.cli.main import main

FAST = ["--d", "2", "--n", "5", "--sigma", "0.5", "--steps", "20", "--batch", "64",
        "--eval-prompts", "500", "--checkpoint-every", "10", "--quiet"]


def train(out: Path, *extra: str) -> int:
    return main(["train", *FAST, *extra, "--out", str(out)])


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("iclab: error: "), err
    assert "Traceback" not in err
    return lines[0]


def unfinished(run: Path) -> None:
    """Make a finished run look killed after its last checkpoint."""
    (run / "result.json").unlink()
    (run / "model.safetensors").unlink()


def test_a_checkpoint_copied_from_another_seed_is_refused_on_rerun(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert train(tmp_path / "seed0", "--seed", "0") == 0
    assert train(tmp_path / "seed1", "--seed", "1") == 0
    capsys.readouterr()
    unfinished(tmp_path / "seed0")
    shutil.copy(tmp_path / "seed1" / "checkpoint.safetensors",
                tmp_path / "seed0" / "checkpoint.safetensors")
    assert train(tmp_path / "seed0", "--seed", "0") == 2
    line = one_error_line(capsys)
    assert "belongs to another run" in line and "--restart" in line
    assert not (tmp_path / "seed0" / "result.json").exists()
    # the other side: its own checkpoint resumes, and --restart starts the foreign one over
    assert train(tmp_path / "seed0", "--seed", "0", "--restart") == 0
    assert (tmp_path / "seed0" / "result.json").is_file()


def test_a_resumed_run_ends_with_the_uninterrupted_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert train(tmp_path / "whole") == 0
    shutil.copytree(tmp_path / "whole", tmp_path / "resumed")
    unfinished(tmp_path / "resumed")
    assert train(tmp_path / "resumed") == 0
    capsys.readouterr()
    assert (tmp_path / "whole" / "model.safetensors").read_bytes() == \
        (tmp_path / "resumed" / "model.safetensors").read_bytes()
    assert (tmp_path / "whole" / "result.json").read_text().split('"wall_seconds"')[0] == \
        (tmp_path / "resumed" / "result.json").read_text().split('"wall_seconds"')[0]


@pytest.mark.parametrize("damage", ["empty", "truncated", "random", "flipped bit"])
def test_a_damaged_checkpoint_names_the_file_and_restart_recovers(
    tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    assert train(run) == 0
    capsys.readouterr()
    unfinished(run)
    path = run / "checkpoint.safetensors"
    data = bytearray(path.read_bytes())
    if damage == "flipped bit":
        data[-4] ^= 1
    changed = {"empty": b"", "truncated": bytes(data[: len(data) // 3]),
               "random": bytes(range(256)) * 4, "flipped bit": bytes(data)}[damage]
    path.write_bytes(changed)
    assert train(run) == 2
    line = one_error_line(capsys)
    assert str(path) in line and "--restart" in line and "--lr" not in line
    assert not (run / "result.json").exists()
    assert train(run, "--restart") == 0
    assert json.loads((run / "result.json").read_text())["test_loss"] > 0


@pytest.mark.parametrize("content", ["", "{not json", "[]", '{"test_loss": "x"}',
                                     '{"test_loss": NaN, "test_loss_stderr": 0.1}',
                                     "[" * 100_000])
def test_a_damaged_result_is_named_not_shown(
    tmp_path: Path, content: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    assert train(run) == 0
    capsys.readouterr()
    (run / "result.json").write_text(content)
    assert train(run) == 2
    assert "result.json" in one_error_line(capsys)
    assert train(run, "--restart") == 0
    assert "test loss" in capsys.readouterr().out


def test_a_corrected_rerun_replaces_its_run_only_with_restart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    assert train(run, "--lr", "1000", "--sigma", "0") == 1     # diverges: no result
    assert "diverged" in one_error_line(capsys)
    assert not (run / "result.json").exists()
    assert train(run, "--sigma", "0") == 2
    assert "different config" in one_error_line(capsys)
    assert train(run, "--sigma", "0", "--restart") == 0
    assert json.loads((run / "config.json").read_text())["lr"] == 0.005


def test_divergence_exits_non_zero_without_a_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The exact command of issue 10, and the same command with the default learning rate."""
    out = tmp_path / "diverged"
    argv = ["train", "--d", "3", "--n", "5", "--sigma", "0", "--steps", "200", "--quiet"]
    assert main([*argv, "--lr", "1000", "--out", str(out)]) == 1
    line = one_error_line(capsys)
    assert "training diverged" in line and "smaller --lr" in line
    assert not (out / "result.json").exists()
    good = tmp_path / "fine"
    assert main([*argv, "--eval-prompts", "2000", "--out", str(good)]) == 0
    assert (good / "result.json").is_file()


def test_metrics_that_became_a_folder_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    assert train(run) == 0
    capsys.readouterr()
    unfinished(run)
    (run / "metrics.jsonl").unlink()
    (run / "metrics.jsonl").mkdir()
    assert train(run) == 2
    assert "metrics.jsonl" in one_error_line(capsys)
    assert not (run / "result.json").exists()


def test_empty_out_is_refused_not_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["train", *FAST, "--out", ""]) == 2
    assert "--out must name a folder" in one_error_line(capsys)
    assert list(tmp_path.iterdir()) == []
    assert main(["train", *FAST, "--out", "."]) == 0   # naming the folder is allowed
    assert (tmp_path / "result.json").is_file()


def test_a_result_that_is_not_finite_is_not_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Weights of size 1e-300 underflow to 0 in float32: Gamma = 0 has no isotropy error."""
    run = tmp_path / "run"
    assert train(run, "--init-scale", "1e-300") == 1
    line = one_error_line(capsys)
    assert "isotropy_err is not finite" in line and "--init-scale" in line
    assert not (run / "result.json").exists()
    assert train(run, "--init-scale", "1e-3", "--restart") == 0
    assert json.loads((run / "result.json").read_text())["isotropy_err"] >= 0
