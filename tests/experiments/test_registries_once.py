"""One Registries object from the command down: a model and a family registered in Python
reach ``run_training`` and ``iclab train`` (the defect of a fresh registry on the way), and one
``iclab train`` builds its registries once and its family once."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

import iclab.experiments.registries as registries_module
import iclab.tasks.registry as family_registry_module
from iclab.cli.main import main
from iclab.config.train import TrainConfig
from iclab.experiments.registries import Registries
from iclab.runs import run_training

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from custom_model import CustomModel

QUICK = {"d": 2, "n": 6, "sigma": 0.1, "steps": 20, "batch": 64, "lr": 0.05,
         "eval_prompts": 500}


def cubic(inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """inputs (B, k, d) -> (B, k): u^T x cubed, u uniform on the sphere per row."""
    u = torch.randn(inputs.shape[0], inputs.shape[2], generator=generator,
                    dtype=inputs.dtype, device=inputs.device)
    return torch.einsum("bkd,bd->bk", inputs, u / u.norm(dim=-1, keepdim=True)) ** 3


def registered() -> Registries:
    registries = Registries()
    registries.models.register(CustomModel)
    registries.families.register_family("cubic", cubic, rotation_invariant=True)
    return registries


def test_a_model_and_a_family_registered_in_python_train_through_run_training(
        tmp_path: Path) -> None:
    registries = registered()
    config = TrainConfig.from_json({"model": "custom-linear", "family": "cubic", **QUICK},
                                   registries.models, families=registries.families)
    result = run_training(config, tmp_path / "run", progress=False, registries=registries)
    assert result["verdict"] in ("optimal", "not optimal", "undetermined")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["model"] == \
        "custom-linear"
    with pytest.raises(Exception, match="unknown family 'cubic'"):  # without them: refused
        run_training(config, tmp_path / "other", progress=False)


def test_a_model_registered_in_python_trains_through_main(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["train", "--model", "custom-linear", "--family", "cubic", "--gamma-init", "0.1",
            *[f"--{key.replace('_', '-')}={value}" for key, value in QUICK.items()],
            "--quiet", "--out", str(tmp_path / "run")]
    assert main(argv, registries=registered()) == 0, capsys.readouterr().err
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["model"] == "custom-linear" and config["gamma_init"] == 0.1
    assert main(argv) == 2  # the built-ins alone do not know it: one line
    assert "unknown model 'custom-linear'" in capsys.readouterr().err


def test_one_train_builds_its_registries_once_and_its_family_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    counts = {"registries": 0, "model registries": 0, "families built": 0}
    original_init = registries_module.Registries.__init__
    original_build = family_registry_module.FamilyRegistry.build
    original_models = registries_module.ModelRegistry.__init__

    def counting_init(self: Registries, *args: object, **kwargs: object) -> None:
        counts["registries"] += 1
        original_init(self, *args, **kwargs)  # type: ignore[arg-type]

    def counting_models(self: object, *args: object, **kwargs: object) -> None:
        counts["model registries"] += 1
        original_models(self, *args, **kwargs)  # type: ignore[arg-type]

    def counting_build(self: object, *args: object, **kwargs: object) -> object:
        counts["families built"] += 1
        return original_build(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(registries_module.Registries, "__init__", counting_init)
    monkeypatch.setattr(registries_module.ModelRegistry, "__init__", counting_models)
    monkeypatch.setattr(family_registry_module.FamilyRegistry, "build", counting_build)
    argv = ["train", *[f"--{key.replace('_', '-')}={value}" for key, value in QUICK.items()],
            "--quiet", "--out", str(tmp_path / "run")]
    assert main(argv) == 0, capsys.readouterr().err
    assert counts == {"registries": 1, "model registries": 1, "families built": 1}
