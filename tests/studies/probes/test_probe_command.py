"""``iclab probe`` end to end: a trained one-layer LSA's attention output decodes the
one-step GD prediction (R^2 >= 0.99; the exact construction of von Oswald et al.), its random
initialisation does not (< 0.5); the files it writes; bad input is one line, exit 2, nothing
written."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from iclab.cli.main import main

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("probe-runs")
    common = ["--d", "3", "--n", "10", "--seed", "0", "--quiet"]
    paths = {"lsa": root / "lsa", "relu": root / "relu"}
    assert main(["train", *common, "--sigma", "0", "--steps", "300",
                 "--out", str(paths["lsa"])]) == 0
    assert main(["train", *common, "--family", "relu", "--steps", "5", "--eval-prompts",
                 "100", "--out", str(paths["relu"])]) == 0
    return paths


def probe(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    code = main(["probe", *argv, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    data: dict[str, object] = json.loads(captured.out)
    return data


def score(data: dict[str, object], hook: str, target: str, control: str) -> float:
    rows = data["rows"]
    assert isinstance(rows, list)
    (row,) = [r for r in rows if r["hook"] == hook and r["target"] == target
              and r["control"] == control and r["position"] == "query"]
    assert row["r2_stderr"] >= 0
    return float(row["r2"])


def test_the_lsa_attention_output_is_one_gd_step(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "p"
    data = probe([str(runs["lsa"]), "--targets", "gd1_pred,w_ols,xty", "--prompts", "600",
                  "--out", str(out)], capsys)
    assert score(data, "attn.1", "gd1_pred", "trained") >= 0.99
    assert score(data, "attn.1", "gd1_pred", "init") < 0.5
    assert abs(score(data, "attn.1", "gd1_pred", "shuffled")) < 0.05
    # the tokens themselves hold no prompt-level target linearly
    assert score(data, "resid.0", "w_ols", "trained") < 0.05
    assert sorted(p.name for p in out.iterdir()) == ["probe.csv", "probe.json", "probe.png"]
    assert json.loads((out / "probe.json").read_text()) == data
    with open(out / "probe.csv") as handle:
        assert len(list(csv.DictReader(handle))) == len(data["rows"])  # type: ignore[arg-type]


def test_layers_and_positions_select_rows(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = probe([str(runs["lsa"]), "--targets", "xty", "--layers", "1", "--prompts", "100",
                  "--positions", "query", "--folds", "2", "--out", str(tmp_path)], capsys)
    rows = data["rows"]
    assert isinstance(rows, list)
    assert {(r["hook"], r["position"]) for r in rows} == {("attn.1", "query")}
    assert len(rows) == 3                              # trained, init, shuffled


@pytest.mark.parametrize(("argv", "message"), [
    (["--hooks", "resid.7"], "unknown hook point 'resid.7'"),
    (["--targets", "w_oops"], "unknown target 'w_oops'"),
    (["--layers", "4"], "layer 4 has no hook point"),
    (["--prompts", "99"], "prompts must be an integer >= 100"),
    (["--folds", "1"], "folds must be an integer >= 2"),
    (["--positions", "middle"], "unknown position 'middle'"),
    (["--hooks", "attn", "--positions", "context"], "no hook point of attn.1 has a context"),
])
def test_bad_options_are_one_line_and_write_nothing(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        argv: list[str], message: str) -> None:
    out = tmp_path / "out"
    assert main(["probe", str(runs["lsa"]), *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_a_linear_target_on_a_nonlinear_family_is_refused(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["probe", str(runs["relu"]), "--targets", "w_ols", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "target 'w_ols' needs a linear Gaussian family" in err
    assert len(err.splitlines()) == 1 and not out.exists()
    data = probe([str(runs["relu"]), "--targets", "xty", "--prompts", "100",
                  "--out", str(out)], capsys)
    assert data["family"] == "relu"


def test_a_folder_without_a_model_is_refused(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "copy"
    folder.mkdir()
    for name in ("config.json", "result.json"):
        (folder / name).write_text((runs["lsa"] / name).read_text())
    assert main(["probe", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert "no model.safetensors" in err and len(err.splitlines()) == 1
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "result.json"]


def test_patch_refuses_models_without_patchable_points_and_nonlinear_families(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for run, message in ((runs["lsa"], "model 'lsa' declares no patchable hook point"),
                         (runs["relu"], "task vectors need a linear Gaussian family")):
        out = tmp_path / run.name
        assert main(["patch", str(run), "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1 and not out.exists()
