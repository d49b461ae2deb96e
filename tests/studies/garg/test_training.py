"""Training on Garg et al.'s families: iclab train exits 0 with the lsa model (and, once the
transformer is registered, with it, its own baselines in prefix.json), with a curriculum."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iclab.cli.main import main
from iclab.models.registry import ModelRegistry

pytestmark = pytest.mark.usefixtures("one_thread")
FAMILIES = {"sparse-linear": ("--sparsity", "2", "lasso"),
            "decision-tree": ("--tree-depth", "3", "gradient-boosting"),
            "relu-network": ("--network-width", "16", "relu-network-fit")}
SMALL = ["--d", "4", "--n", "8", "--steps", "10", "--batch", "64", "--eval-prompts", "500",
         "--quiet"]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_train_lsa_on_each_family(family: str, tmp_path: Path) -> None:
    option, value, _ = FAMILIES[family]
    out = tmp_path / "run"
    assert main(["train", "--family", family, option, value, *SMALL, "--out", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    result = json.loads((out / "result.json").read_text())
    assert config["family"] == family and config[option[2:].replace("-", "_")] == int(value)
    assert result["sampler"] == "prompts" and result["test_loss"] > 0


def test_train_with_a_curriculum(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = ["train", "--family", "sparse-linear", "--sparsity", "1", "--curriculum-every", "3",
            "--curriculum-d-start", "2", "--curriculum-n-start", "3", *SMALL, "--out", str(out)]
    assert main(argv) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["curriculum_every"] == 3 and config["curriculum_d_start"] == 2


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_transformer_on_each_family_writes_its_baselines(family: str, tmp_path: Path) -> None:
    if "transformer" not in ModelRegistry().names:
        pytest.skip("the transformer model is not registered on this branch")
    option, value, baseline = FAMILIES[family]
    out = tmp_path / "run"
    argv = ["train", "--model", "transformer", "--layers", "2", "--heads", "2", "--width",
            "32", "--family", family, option, value, "--d", "4", "--n", "8", "--steps", "100",
            "--batch", "64", "--eval-prompts", "100", "--quiet", "--out", str(out)]
    assert main(argv) == 0
    prefix = json.loads((out / "prefix.json").read_text())
    assert baseline in prefix["predictors"]
    rows = prefix["rows"]
    assert [row["k"] for row in rows] == list(range(9))
    assert all(row[baseline] is not None and row[baseline] >= 0 for row in rows)
    if family == "sparse-linear":        # noiseless, s = 2 of d = 4: Lasso nearly exact at k = 8
        assert rows[8][baseline] < 0.05 * rows[0][baseline]


def test_shift_cli_garg_kinds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    assert main(["train", "--d", "4", "--n", "3", "--steps", "10", "--batch", "64",
                 "--eval-prompts", "500", "--quiet", "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["shift", str(run), "--kind", "orthogonal-query", "--values", "0,1",
                 "--prompts", "2000", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    # at 1 every predictor linear in the context's span predicts 0: loss E||x_q||^2 = d = 4
    assert rows[1]["exact_loss"] is None and rows[1]["gd_exact_loss"] is None
    assert abs(rows[1]["ols_loss"] - 4) < 4 * rows[1]["ols_loss_stderr"]
    assert rows[0]["ols_loss"] < 0.5 * rows[1]["ols_loss"]
    for argv, message in (
            (["--kind", "orthant", "--values", "0,2"], "shift orthant: value 2.0 is not allowed"),
            (["--kind", "sideways", "--values", "1"], "unknown shift kind 'sideways'"),
            (["--kind", "skewed-covariance", "--values", "0,-1"],
             "shift skewed-covariance: value -1.0 is not allowed")):
        out = tmp_path / "never"
        assert main(["shift", str(run), *argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1 and not out.exists()
    deep = tmp_path / "deep"
    assert main(["train", "--d", "2", "--n", "3", "--steps", "5", "--batch", "64",
                 "--eval-prompts", "500", "--quiet", "--out", str(deep)]) == 0
    capsys.readouterr()
    assert main(["shift", str(deep), "--kind", "orthogonal-query", "--values", "1"]) == 2
    assert "needs fewer context examples" in capsys.readouterr().err
    assert not (deep / "shift-orthogonal-query").exists()
