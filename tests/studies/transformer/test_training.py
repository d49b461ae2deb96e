"""``iclab train --model transformer``: the run folder's prefix files, result keys, the prefix
curves of the baselines against their closed forms, and devices."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from iclab.cli.main import main

TINY = ["--model", "transformer", "--layers", "1", "--heads", "2", "--width", "8",
        "--steps", "6", "--batch", "16", "--eval-prompts", "3000", "--log-every", "3"]


def test_a_tiny_run_writes_the_prefix_curves(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["train", *TINY, "--d", "3", "--n", "8", "--sigma", "0.5", "--quiet",
                 "--out", str(out)]) == 0
    for name in ("prefix.json", "prefix.csv", "prefix.png"):
        assert (out / name).stat().st_size > 0
    curves = json.loads((out / "prefix.json").read_text())
    rows = curves["rows"]
    assert [row["k"] for row in rows] == list(range(9)) and curves["prompts"] == 3000
    assert {"model", "ols", "ridge", "averaging", "3-nn", "bayes", "one-step-gd"} <= set(
        curves["predictors"])
    # the measured least-squares and averaging curves against their closed forms: within
    # 4 standard errors wherever the closed form is finite (least squares at k = d-1, d, d+1
    # with noise is infinite: null)
    assert [row["ols_exact"] is None for row in rows] == [k in (2, 3, 4) for k in range(9)]
    for row in rows:
        for name in ("ols", "averaging"):
            exact = row[f"{name}_exact"]
            if exact is not None and (name != "ols" or abs(row["k"] - 3) > 2):
                assert abs(row[name] - exact) <= 4 * row[f"{name}_stderr"] + 1e-9, (name, row)
    # every predictor predicts 0 from an empty prompt: error (d + sigma^2) / d
    assert rows[0]["ols"] == rows[0]["averaging"] == rows[0]["bayes"]
    assert rows[0]["model"] == pytest.approx(1.0 + 0.25 / 3, abs=0.15)
    result = json.loads((out / "result.json").read_text())
    assert result["prefix_error_at_d"] == rows[3]["model"]
    assert result["prefix_error_at_2d"] == rows[6]["model"]
    assert result["prefix_ratio_to_ols_at_2d"] == pytest.approx(rows[6]["model"] /
                                                                rows[6]["ols"])
    csv_lines = (out / "prefix.csv").read_text().splitlines()
    assert len(csv_lines) == 10 and csv_lines[0].startswith("k,model,model_stderr")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal where CUDA is absent")
def test_cuda_without_cuda_is_one_line_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    code = main(["train", *TINY, "--d", "2", "--n", "3", "--device", "cuda", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "CUDA is not available" in err
    assert not out.exists()


def test_auto_device_and_the_width_hint(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "auto"
    assert main(["train", *TINY, "--d", "2", "--n", "3", "--device", "auto", "--quiet",
                 "--out", str(out)]) == 0
    assert json.loads((out / "config.json").read_text())["device"] == "auto"
    capsys.readouterr()
    code = main(["train", "--width", "4", "--d", "2", "--n", "3", "--out", str(tmp_path / "w")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "--width applies only to model" in err and "model transformer" in err
    assert "family two-layer-relu" in err
    assert math.isfinite(json.loads((out / "result.json").read_text())["test_loss"])


@pytest.mark.slow
def test_a_small_transformer_learns_in_context(tmp_path: Path) -> None:
    """800 steps at d = 2, n = 8 (about 8 s of CPU): Garg et al.'s picture in small, the
    curve starts at the prior's error and ends far below averaging's, which is exact here
    ((d + 1)/k, docs/theory.md section 17.2)."""
    out = tmp_path / "small"
    assert main(["train", "--model", "transformer", "--layers", "2", "--width", "32", "--d",
                 "2", "--n", "8", "--steps", "800", "--eval-prompts", "2000", "--quiet",
                 "--out", str(out)]) == 0
    rows = json.loads((out / "prefix.json").read_text())["rows"]
    assert abs(rows[0]["model"] - 1.0) <= 4 * rows[0]["model_stderr"] + 0.02
    assert rows[4]["model"] < 0.5 * (3 / 4)        # k = 2d: half of averaging's
    assert rows[8]["model"] < 3 / 8                 # k = n: below averaging's
    assert rows[8]["model"] < 0.5 * rows[1]["model"]
