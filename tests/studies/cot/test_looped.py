"""The looped transformer (``--model transformer --loops T``): one loop is the transformer
itself, T loops are the blocks applied T times with the embedding injected (computed here from
the model's modules), the weights and config of an unlooped run are unchanged, the parameter
counts are printed, and bad loop counts are refused."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from iclab.cli.main import main
from iclab.cli.run_options import config_from_options
from iclab.config.train import TrainConfig
from iclab.experiments.registries import Registries
from iclab.studies.transformer.model import Transformer
from iclab.studies.transformer.options import TransformerOptions
from tests.cli.test_bad_input import assert_refused

OPTIONS = TransformerOptions(layers=2, heads=2, width=16, max_examples=16)


def model(options: TransformerOptions) -> Transformer:
    return Transformer(3, options, torch.Generator().manual_seed(5), torch.float64)


def prompts() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    X = torch.randn(4, 6, 3, generator=generator, dtype=torch.float64)
    return X, X.sum(-1)


def test_one_loop_is_the_transformer() -> None:
    X, y = prompts()
    looped = model(dataclasses.replace(OPTIONS, loops=1)).predict_prefixes(X, y)
    assert torch.equal(looped, model(OPTIONS).predict_prefixes(X, y))


def test_loops_apply_the_blocks_again_with_the_input_injected() -> None:
    X, y = prompts()
    looped = model(dataclasses.replace(OPTIONS, loops=3))
    tokens = torch.zeros(4, 12, 3, dtype=torch.float64)
    tokens[:, 0::2], tokens[:, 1::2, 0] = X, y
    embedded = looped.read_in(tokens) + looped.positions[:12]
    h = torch.zeros_like(embedded)
    for _ in range(3):  # Yang et al.: Y_{t+1} = blocks(Y_t + P), Y_0 = 0
        h = h + embedded
        for block in looped.blocks:
            h = block(h, lambda t: t)
    expected = looped.read_out(looped.ln_f(h[:, 0::2]))[..., 0]
    assert torch.allclose(looped.predict_prefixes(X, y), expected, atol=1e-12)
    assert not torch.allclose(expected, model(OPTIONS).predict_prefixes(X, y), atol=1e-3)
    held = sum(p.numel() for p in looped.parameters())
    assert held == Transformer.parameter_count(looped.options, 3) == sum(
        p.numel() for p in model(OPTIONS).parameters())


def test_unlooped_config_unchanged() -> None:
    config = TrainConfig.flat(model="transformer", d=3, n=5)
    assert "loops" not in config.to_json()
    assert config_from_options({"model": "transformer", "d": 3, "n": 5, "loops": 64},
                               Registries()).model.loops == 64


def test_train_prints_the_parameter_counts(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["train", "--model", "transformer", "--loops", "4", "--layers", "1", "--width",
                 "16", "--d", "3", "--n", "6", "--steps", "20", "--eval-prompts", "500",
                 "--out", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    result = json.loads((out / "result.json").read_text())
    wide = dataclasses.replace(TransformerOptions(), layers=4, width=16)
    assert result["parameter_count_unlooped_same_depth"] == Transformer.parameter_count(wide, 3)
    assert f"parameters (1 blocks x 4 loops)   {result['parameter_count']}" in text
    assert (out / "prefix.json").exists()


@pytest.mark.parametrize("argv", [["--model", "transformer", "--loops", "0"],
                                  ["--model", "transformer", "--loops", "65"],
                                  ["--loops", "2"]])
def test_bad_loops_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert_refused(["train", *argv, "--d", "3", "--n", "5", "--out", "run", "--steps", "2",
                    "--quiet"], capsys)
