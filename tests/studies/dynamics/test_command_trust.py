"""``iclab dynamics`` keeps its promise: no convergence claimed on a plateau, every option it
records used or refused, bounded integrations, no traceback, files all or none."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from iclab.cli.main import main
from iclab.theory.gaussian import gaussian_optimum

SMALL = ["--d", "2", "--n", "4", "--kq", "separate", "--heads", "2", "--init-scale", "0.01",
         "--lr", "0.01", "--steps", "4", "--quiet"]


def test_the_plateau_of_the_issue_is_not_called_converged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "D.npy", np.diag([1.0, 0.01]))
    assert main(["dynamics", "--d", "2", "--n", "4", "--kq", "separate", "--heads", "2",
                 "--init-scale", "1e-3", "--lr", "1e-3", "--steps", "30", "--flow-only",
                 "--cov-x", str(tmp_path / "D.npy"), "--json", "--quiet",
                 "--out", str(tmp_path / "dyn")]) == 0
    data = json.loads(capsys.readouterr().out)
    star = gaussian_optimum(4, 0.0, np.diag([1.0, 0.01])).loss
    gap = data["flow_final_loss"] / star - 1
    assert gap > data["flow_converged_gap"]          # on the rank-1 plateau
    assert data["flow_converged"] is False and data["flow_stop"] == "stalled"


@pytest.mark.parametrize(("extra", "named"), [
    (["--clip-grad", "1"], "--clip-grad"),
    (["--pretrain-prompts", "100"], "--pretrain-prompts"),
    (["--curriculum-every", "2", "--curriculum-d-start", "1"], "--curriculum-every"),
    (["--exact"], "--exact"),
    (["--device", "cuda"], "--device"),
    (["--device", "auto"], "--device"),
    (["--checkpoint-every", "2"], "--checkpoint-every"),
    (["--flow-only", "--batch", "10"], "--batch"),
    (["--flow-only", "--eval-prompts", "10"], "--eval-prompts"),
    (["--flow-only", "--sampler", "prompts"], "--sampler"),
    (["--flow-only", "--replicates", "3"], "--replicates"),
    (["--tasks", "5"], "no task pool"),
    (["--x-law", "uniform"], "linear Gaussian"),
    (["--context-correlation", "0.3"], "independent covariates"),
    (["--lr", "1e15", "--steps", "30"], "limit 300000"),
    (["--steps", "400000", "--log-every", "1", "--lr", "1e-9"], "log fewer times"),
    (["--layers", "2"], "--layers"),
    (["--looped"], "--looped"),
])
def test_options_it_does_not_honour_are_refused_before_any_work(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str],
        named: str) -> None:
    out = tmp_path / "out"
    assert main(["dynamics", *SMALL, *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and named in err[0], err
    assert not out.exists()


def test_the_edges_are_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--device cpu, and one logged time (one step) with SGD: no traceback, three files."""
    out = tmp_path / "out"
    assert main(["dynamics", *SMALL[:-3], "--steps", "1", "--device", "cpu",
                 "--replicates", "2", "--quiet", "--out", str(out)]) == 0
    assert "largest" not in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["dynamics.csv", "dynamics.json",
                                                     "dynamics.png"]


def test_sgd_divergence_is_one_line_without_warnings(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    with np.errstate(all="warn"), warnings.catch_warnings():
        warnings.simplefilter("error")
        code = main(["dynamics", *SMALL[:-5], "--lr", "30", "--steps", "20",
                     "--replicates", "2", "--quiet", "--out", str(out)])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "SGD diverged by step" in err[0] and "lower --lr" in err[0]
    assert not out.exists()


@pytest.fixture(scope="module")
def sgd_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("runs") / "run"
    assert main(["train", *SMALL, "--optimizer", "sgd", "--lr-schedule", "constant",
                 "--log-every", "2", "--batch", "16", "--eval-prompts", "50",
                 "--out", str(run)]) == 0
    return run


EDITS = {
    "empty": lambda lines: [],
    "not json": lambda lines: ["{step: 2", *lines[1:]],
    "a list": lambda lines: ["[1, 2]", *lines[1:]],
    "step a string": lambda lines: [lines[0].replace('"step": 2', '"step": "2"'), lines[1]],
    "step a float": lambda lines: [lines[0].replace('"step": 2', '"step": 2.0'), lines[1]],
    "step true": lambda lines: [lines[0].replace('"step": 2', '"step": true'), lines[1]],
    "steps out of order": lambda lines: [lines[1], lines[0]],
    "step past the run": lambda lines: [lines[0], lines[1].replace('"step": 4', '"step": 5')],
    "loss NaN": lambda lines: [json.dumps({**json.loads(lines[0]), "loss": "x"}).replace(
        '"x"', "NaN"), lines[1]],
    "loss missing": lambda lines: [json.dumps({k: v for k, v in json.loads(lines[0]).items()
                                               if k != "loss"}), lines[1]],
    "time of another run": lambda lines: [json.dumps({**json.loads(lines[0]), "time": 0.5}),
                                          lines[1]],
    "stderr a string": lambda lines: [json.dumps({**json.loads(lines[0]),
                                                  "loss_stderr": "big"}), lines[1]],
}


def test_the_run_itself_is_read(sgd_run: Path, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(sgd_run, run)
    assert main(["dynamics", str(run), "--quiet", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["steps"] == [2, 4]


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edited_metrics_file_is_one_line_and_writes_nothing(
        sgd_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: str) -> None:
    run = tmp_path / "run"
    shutil.copytree(sgd_run, run)
    lines = (run / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 2
    (run / "metrics.jsonl").write_text("".join(f"{line}\n" for line in EDITS[edit](lines)))
    assert main(["dynamics", str(run), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "metrics" in err[0], err
    assert not (run / "dynamics").exists()


def test_a_run_folder_takes_no_replicates(sgd_run: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dynamics", str(sgd_run), "--replicates", "3", "--quiet"]) == 2
    assert "give no task, model or optimiser options" in capsys.readouterr().err
