"""``iclab certify``: optimal LSAs are certified, sub-optimal ones are not, bad folders refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.torch import save_file

from iclab.algorithms.construct import lsa_from_gamma
from iclab.analysis.evaluate import test_loss as model_test_loss
from iclab.cli.main import main
from iclab.config.train import TrainConfig
from iclab.runs import run_training as train
from iclab.runs.certify import certify_run
from iclab.theory.family_optimum import family_optimum
from iclab.utils.errors import ConfigError
from iclab.utils.io import atomic_write_json

FIT, TEST = 100_000, 60_000


def fake_run(folder: Path, config: TrainConfig, scale: float) -> Path:
    """A finished run folder whose model is scale * Gamma* exactly (no training)."""
    task = config.make_task()
    model = lsa_from_gamma(scale * family_optimum(task).gamma)
    loss, stderr = model_test_loss(model, task, config.run.eval_prompts, config.run.seed)
    folder.mkdir()
    atomic_write_json(folder / "config.json", config.to_json())
    save_file({k: v.contiguous() for k, v in model.state_dict().items()},
              str(folder / "model.safetensors"))
    atomic_write_json(folder / "result.json", {"test_loss": loss, "test_loss_stderr": stderr})
    return folder


@pytest.mark.parametrize("family", ["linear-gaussian", "relu"])
def test_the_optimum_is_certified_and_a_detuned_one_is_not(family: str, tmp_path: Path) -> None:
    config = TrainConfig.flat(d=2, n=6, sigma=0.5, family=family, eval_prompts=40_000)
    optimal = certify_run(fake_run(tmp_path / "opt", config, 1.0), FIT, TEST, seed=1)
    assert abs(optimal["z_paired"]) <= 3 and abs(optimal["z"]) <= 3
    assert optimal["paired_excess_stderr"] < 0.1 * optimal["excess_stderr"]
    detuned = certify_run(fake_run(tmp_path / "off", config, 1.25), FIT, TEST, seed=1)
    assert detuned["z_paired"] > 6
    assert detuned["paired_excess"] > 0


def test_cli_json_and_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = TrainConfig.flat(d=2, n=4, sigma=0.2, eval_prompts=5000)
    run_dir = fake_run(tmp_path / "run", config, 1.3)
    assert main(["certify", str(run_dir), "--fit-prompts", "20000", "--test-prompts",
                 "20000", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"].startswith("not optimal") and report["z_paired"] > 3
    assert set(report["span"]) >= {"gamma", "eta", "isotropy_err", "nuisance"}
    assert main(["certify", str(run_dir), "--fit-prompts", "20000", "--test-prompts",
                 "20000"]) == 0
    out = capsys.readouterr().out
    assert "span bound (all LSAs)" in out and "standard errors above" in out


def test_unfinished_runs_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for folder in (tmp_path / "missing", tmp_path):
        assert main(["certify", str(folder)]) == 2
        err = capsys.readouterr().err
        assert "is not a finished iclab run" in err and err.count("\n") == 1
    config = TrainConfig.flat(d=2, n=4, sigma=0.2, eval_prompts=500)
    run_dir = fake_run(tmp_path / "run", config, 1.0)
    (run_dir / "model.safetensors").unlink()
    with pytest.raises(ConfigError, match=r"no model\.safetensors"):
        certify_run(run_dir, 2000, 1000)
    (run_dir / "result.json").write_text("{not json")
    assert main(["certify", str(run_dir)]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.slow
def test_a_trained_relu_run_is_certified(tmp_path: Path) -> None:
    config = TrainConfig.flat(d=3, n=6, sigma=0.5, family="relu", steps=1000, batch=2048,
                         eval_prompts=50_000)
    result = train(config, tmp_path / "run", progress=False)
    assert result["eta_rel_err"] < 0.02
    report = certify_run(tmp_path / "run", test_prompts=100_000)
    assert report["z_paired"] <= 3
    assert np.isfinite(report["bound"])
