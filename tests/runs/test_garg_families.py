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
            "--batch", "64", "--eval-prompts", "256", "--quiet", "--out", str(out)]
    assert main(argv) == 0
    prefix = (out / "prefix.json").read_text()
    assert baseline in prefix
