"""``iclab dynamics`` and ``iclab train --optimizer sgd`` end to end (small), and their bad
input: one line, exit code 2, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from iclab.cli.main import main
from iclab.theory.gaussian import gaussian_optimum

SMALL = ["--d", "2", "--n", "5", "--sigma", "0.2", "--kq", "separate", "--heads", "2",
         "--init-scale", "0.01", "--lr", "0.01", "--steps", "60", "--quiet"]


def test_train_with_sgd_logs_the_time_axis(tmp_path: Path) -> None:
    out = tmp_path / "run"
    code = main(["train", "--d", "2", "--n", "5", "--optimizer", "sgd", "--lr", "0.01",
                 "--lr-schedule", "constant", "--steps", "20", "--log-every", "10",
                 "--batch", "64", "--eval-prompts", "200", "--quiet", "--out", str(out)])
    assert code == 0
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [round(line["time"], 12) for line in lines] == [0.1, 0.2]
    assert all(line["loss_stderr"] > 0 for line in lines)


@pytest.mark.parametrize(("args", "message"), [
    (["train", "--d", "2", "--n", "5", "--optimizer", "nonsense"], "optimizer must be one of"),
    (["train", "--d", "2", "--n", "5", "--momentum", "0.5"], "momentum applies to"),
    (["dynamics", "--d", "2", "--n", "5", "--lr", "0.01", "--steps", "10"],
     "needs the multi-head lsa model"),
    (["dynamics", *SMALL, "--optimizer", "adam"], "compares plain SGD"),
    (["dynamics", *SMALL, "--replicates", "1"], "--replicates must be"),
    (["dynamics", *SMALL, "--momentum", "0.5"], "momentum 0"),
    (["dynamics", "--lr", "0.01"], "give --d and --n"),
])
def test_bad_input_is_one_line_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
        message: str) -> None:
    out = tmp_path / "out"
    assert main([*args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not out.exists()


def test_flow_only_ends_at_the_optimum_and_writes_its_files(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    out = tmp_path / "dyn"
    assert main(["dynamics", *SMALL, "--flow-only", "--json", "--out", str(out)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert sorted(p.name for p in out.iterdir()) == ["dynamics.csv", "dynamics.json",
                                                     "dynamics.png"]
    assert len(data["times"]) == len(data["flow_loss"]) == 30
    assert data["sgd_loss"] is None
    star = gaussian_optimum(5, 0.2, d=2).loss
    assert data["flow_final_loss"] == pytest.approx(star, rel=1e-8)
    assert data["plateaus"][-1]["components"] == 2
    rows = (out / "dynamics.csv").read_text().splitlines()
    assert rows[0] == "time,step,flow_loss,sgd_loss,sgd_loss_stderr" and len(rows) == 31


def test_sgd_replicates_and_a_run_folder(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "dyn"
    assert main(["dynamics", *SMALL, "--replicates", "3", "--eval-prompts", "2000",
                 "--json", "--out", str(out)]) == 0
    data = json.loads(capsys.readouterr().out)
    sgd, flow = np.array(data["sgd_exact_loss"]), np.array(data["flow_loss"])
    assert np.all(np.abs(sgd / flow - 1) < 0.05)    # lr 0.01: SGD near the flow
    run = tmp_path / "run"
    assert main(["train", *SMALL, "--optimizer", "sgd", "--lr-schedule", "constant",
                 "--log-every", "20", "--batch", "256", "--eval-prompts", "500",
                 "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["dynamics", str(run), "--quiet", "--json"]) == 0
    from_run = json.loads(capsys.readouterr().out)
    assert from_run["steps"] == [20, 40, 60]
    assert (run / "dynamics" / "dynamics.png").is_file()
