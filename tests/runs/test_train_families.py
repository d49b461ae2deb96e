"""Training on every family: config validation, the train CLI's --family/--width,
result keys."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from iclab.cli.main import main
from iclab.config.train import TrainConfig
from iclab.runs import run_training as train
from iclab.tasks.nonlinear import TwoLayerReluTask
from iclab.theory.rotation_invariant import relu_optimum
from iclab.utils.errors import ConfigError

GAUSSIAN_KEYS = {
    "eta_hat", "eta_star", "eta_rel_err", "isotropy_err", "gamma", "gamma_star",
    "gamma_rel_err", "gamma_star_isotropic", "nuisance", "test_loss", "test_loss_stderr",
    "loss_star", "wall_seconds", "cpu_seconds", "threads", "sampler", "vs_optimal_gd",
    "gamma_parts",
    "verdict", "excess_z", "verdict_reference", "verdict_evidence", "verdict_needs", "binding",
}
QUICK = {"steps": 20, "batch": 128, "eval_prompts": 1000, "log_every": 10}


def test_config_families_and_samplers() -> None:
    assert TrainConfig.flat(d=2, n=3, sigma=0.1).resolved_sampler() == "statistics"
    anisotropic = TrainConfig.flat(d=2, n=3, sigma=0.1, family="anisotropic")
    assert anisotropic.resolved_sampler() == "statistics"
    assert TrainConfig.flat(d=2, n=3, sigma=0.1, family="relu").resolved_sampler() == "statistics"
    two_layer = TrainConfig.flat(d=2, n=3, sigma=0.1, family="two-layer-relu")
    assert two_layer.resolved_sampler() == "prompts"
    config = TrainConfig.flat(d=2, n=3, sigma=0.1, family="two-layer-relu", width=5).validate()
    assert TrainConfig.from_json(config.to_json()) == config
    task = config.make_task()
    assert config.to_json()["width"] == 5
    assert isinstance(task, TwoLayerReluTask) and task.width == 5
    with pytest.raises(ConfigError, match="sampler statistics needs a family with the suff"):
        TrainConfig.flat(d=2, n=3, sigma=0.1, family="two-layer-relu",
                         sampler="statistics").validate()
    with pytest.raises(ConfigError, match="unknown family 'cubic'"):
        TrainConfig.flat(d=2, n=3, sigma=0.1, family="cubic").validate()
    with pytest.raises(ConfigError, match="width applies only"):
        TrainConfig.flat(d=2, n=3, sigma=0.1, width=3).validate()
    with pytest.raises(ConfigError, match="width must be an integer >= 1"):
        TrainConfig.flat(d=2, n=3, sigma=0.1, family="two-layer-relu", width=-1).validate()


def test_train_cli_on_a_nonlinear_family(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    argv = ["train", "--family", "two-layer-relu", "--width", "4", "--d", "2", "--n", "4",
            "--sigma", "0.1", "--steps", "20", "--batch", "128", "--eval-prompts", "1000",
            "--quiet", "--out", str(out)]
    assert main(argv) == 0
    result = json.loads((out / "result.json").read_text())
    config = json.loads((out / "config.json").read_text())
    assert config["family"] == "two-layer-relu" and config["width"] == 4
    assert set(result) == GAUSSIAN_KEYS and result["sampler"] == "prompts"
    assert result["eta_star"] == pytest.approx(relu_optimum(4, 2, 0.1).eta, rel=1e-14)
    assert "eta*" in capsys.readouterr().out
    bad = ["train", "--family", "relu", "--cov-x", "x.npy", "--d", "2", "--n", "4", "--sigma",
           "0.1", "--out", str(tmp_path / "bad")]
    assert main(bad) == 2 and not (tmp_path / "bad").exists()
    assert "--cov-x applies only to family linear-gaussian" in capsys.readouterr().err


def test_linear_gaussian_result_keys_are_unchanged(tmp_path: Path) -> None:
    result = train(TrainConfig.flat(d=2, n=3, sigma=0.1, **QUICK), tmp_path / "run", progress=False)
    assert set(result) == GAUSSIAN_KEYS


def test_a_monte_carlo_family_reports_its_stderr(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "fam_mod.py").write_text(textwrap.dedent("""
        import torch

        def sign_linear(inputs, generator):
            w = torch.randn(inputs.shape[0], inputs.shape[2], generator=generator,
                            dtype=inputs.dtype)
            z = torch.einsum("bkd,bd->bk", inputs, w)
            return z + 0.5 * torch.sign(z)

        sign_linear.rotation_invariant = True
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    config = TrainConfig.flat(d=2, n=3, sigma=0.1, family="fam_mod:sign_linear", **QUICK)
    result = train(config, tmp_path / "run", progress=False)
    assert set(result) == GAUSSIAN_KEYS | {"method", "eta_star_stderr", "loss_star_stderr"}
    assert result["method"] == "monte-carlo"
    assert 0 < result["eta_star_stderr"] <= 0.002 * result["eta_star"]


@pytest.mark.slow
def test_relu_training_finds_the_optimal_step_size(tmp_path: Path) -> None:
    config = TrainConfig.flat(d=5, n=20, sigma=0.5, family="relu")
    result = train(config, tmp_path / "run", progress=False)
    assert result["eta_rel_err"] < 0.02 and result["isotropy_err"] < 0.05
