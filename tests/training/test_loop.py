import json
from pathlib import Path

import pytest

import iclab.training.loop as loop
from iclab.config.train import TrainConfig
from iclab.runs import run_training as train
from iclab.training.loop import TrainingDivergedError
from iclab.utils.errors import ConfigError

SMALL = {"d": 3, "n": 6, "sigma": 0.5, "steps": 60, "batch": 256, "checkpoint_every": 20,
         "log_every": 10, "eval_prompts": 2000}


def test_run_folder_contents(tmp_path: Path) -> None:
    result = train(TrainConfig.flat(**SMALL), tmp_path / "run", progress=False)
    files = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert files == ["checkpoint.safetensors", "config.json", "metrics.jsonl",
                     "model.safetensors", "result.json"]
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved == TrainConfig.flat(**SMALL).to_json()
    steps = [json.loads(line)["step"] for line in (tmp_path / "run" / "metrics.jsonl").open()]
    assert steps == list(range(10, 61, 10))
    for key in ("eta_hat", "eta_star", "eta_rel_err", "isotropy_err", "gamma", "gamma_star",
                "gamma_rel_err", "nuisance", "test_loss", "test_loss_stderr", "loss_star",
                "wall_seconds"):
        assert key in result
    assert result == json.loads((tmp_path / "run" / "result.json").read_text())


@pytest.mark.parametrize("sampler", ["statistics", "prompts"])
def test_interrupted_run_resumes_bit_identically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sampler: str
) -> None:
    config = TrainConfig.flat(**SMALL, sampler=sampler)
    clean = train(config, tmp_path / "clean", progress=False)

    real_save = loop.save_checkpoint
    calls = {"n": 0}

    def save_then_die(*args: object, **kwargs: object) -> None:
        real_save(*args, **kwargs)  # type: ignore[arg-type]
        calls["n"] += 1
        if calls["n"] == 2:  # after the checkpoint at step 40
            raise KeyboardInterrupt

    monkeypatch.setattr(loop, "save_checkpoint", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        train(config, tmp_path / "resumed", progress=False)
    assert not (tmp_path / "resumed" / "result.json").exists()
    monkeypatch.setattr(loop, "save_checkpoint", real_save)
    resumed = train(config, tmp_path / "resumed", progress=False)
    for key in ("eta_hat", "test_loss", "gamma", "isotropy_err", "nuisance"):
        assert resumed[key] == clean[key]
    assert (tmp_path / "resumed" / "model.safetensors").read_bytes() == (
        tmp_path / "clean" / "model.safetensors").read_bytes()
    assert (tmp_path / "resumed" / "metrics.jsonl").read_text() == (
        tmp_path / "clean" / "metrics.jsonl").read_text()


def test_finished_run_is_not_rerun(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = train(TrainConfig.flat(**SMALL), tmp_path, progress=False)
    monkeypatch.setattr(loop, "make_objective", lambda *a, **k: pytest.fail("re-trained"))
    assert train(TrainConfig.flat(**SMALL), tmp_path, progress=False) == first


def test_folder_with_another_config_is_refused(tmp_path: Path) -> None:
    train(TrainConfig.flat(**SMALL), tmp_path, progress=False)
    with pytest.raises(ConfigError, match="different config"):
        train(TrainConfig.flat(**{**SMALL, "sigma": 0.25}), tmp_path, progress=False)
    stranger = tmp_path / "other"
    stranger.mkdir()
    (stranger / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not empty"):
        train(TrainConfig.flat(**SMALL), stranger, progress=False)


def test_divergence_stops_without_a_result(tmp_path: Path) -> None:
    config = TrainConfig.flat(**{**SMALL, "lr": 1e12, "lr_schedule": "constant"})
    with pytest.raises(TrainingDivergedError, match="diverged at step"):
        train(config, tmp_path, progress=False)
    assert not (tmp_path / "result.json").exists()
    assert not (tmp_path / "model.safetensors").exists()


def test_a_rare_huge_batch_loss_is_not_divergence(tmp_path: Path) -> None:
    # a four-layer full model's prediction is a polynomial of degree 9 in the prompt: in its
    # first steps single batches reach losses above 1e4 times the first one, and it trains on
    config = TrainConfig.flat(d=5, n=20, layers=4, steps=60, log_every=20, eval_prompts=2000)
    result = train(config, tmp_path, progress=False)
    means = [json.loads(line)["loss"] for line in (tmp_path / "metrics.jsonl").open()]
    first = 3.08  # the untrained model's first batch loss, seed 0
    assert max(means) > loop.DIVERGENCE_FACTOR * first
    assert result["test_loss"] < first


def test_cuda_is_refused_where_absent(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ConfigError, match="CUDA is not available"):
        train(TrainConfig.flat(**{**SMALL, "device": "cuda"}), tmp_path / "x", progress=False)
    assert not (tmp_path / "x").exists()
