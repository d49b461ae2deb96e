"""Every option a model's constructor refuses is refused by TrainConfig.validate, before any file:
``iclab train`` and ``iclab sweep`` leave no config.json behind (before, the transformer's
width not divisible by its heads, a transformer too large to hold and the multi-head lsa's
refusals were raised when the model was built, after config.json was written), and a spec
asking for a device this machine lacks is refused before any run."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from iclab.cli.main import main
from iclab.config.sections import MEMORY_LIMIT_BYTES
from iclab.config.train import TrainConfig
from iclab.studies.transformer.model import Transformer
from iclab.studies.transformer.options import TransformerOptions
from iclab.utils.errors import ConfigError

from .test_bad_input import FAST, assert_refused

TRANSFORMER = ["--model", "transformer", "--layers", "1"]
REFUSED = {
    "width not divisible by heads": ([*TRANSFORMER, "--width", "63", "--heads", "2"],
                                     "divisible by heads"),
    "transformer too large": ([*TRANSFORMER, "--width", "65536", "--heads", "1"],
                              "the limit is 8 GiB"),
    "rank above d": (["--kq", "separate", "--rank", "3"], "rank must be at most d = 2"),
    "key_dim with heads": (["--heads", "2", "--key-dim", "3"], "key_dim does not apply"),
    "random start with heads": (["--heads", "2", "--init", "random"], "gd-subspace"),
    "key_dim with layers": (["--layers", "3", "--key-dim", "4"], "one-layer lsa model only"),
    "rank with merged heads": (["--rank", "2"], "rank applies to kq separate only"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_iclab_train_refuses_before_writing_config_json(
        case: str, capsys: pytest.CaptureFixture[str]) -> None:
    extra, words = REFUSED[case]
    err = assert_refused(["train", *FAST, *extra, "--out", "run"], capsys)
    assert words in err, err


def test_the_edges_of_those_refusals_validate() -> None:
    """The accepted side of each: width divisible by heads, rank = d, a transformer just
    under the limit."""
    base = {"d": 2, "n": 5}
    TrainConfig.flat(**base, model="transformer", width=64, heads=2).validate()
    TrainConfig.flat(**base, kq="separate", rank=2).validate()
    TrainConfig.flat(**base, heads=2).validate()
    with pytest.raises(ConfigError, match="divisible"):
        TrainConfig.flat(**base, model="transformer", width=64, heads=3).validate()
    # 16 bytes per weight (weights, gradients, Adam's two moments): 8 GiB hold 512 Mi weights
    fits = TransformerOptions(layers=1, width=4096, heads=1, mlp_width=1)
    over = TransformerOptions(layers=1, width=16384, heads=1, mlp_width=1)
    assert 16 * Transformer.parameter_count(fits, 2) <= MEMORY_LIMIT_BYTES \
        < 16 * Transformer.parameter_count(over, 2)
    TrainConfig.flat(**base, model="transformer", layers=1, width=4096, heads=1,
                     mlp_width=1).validate()
    with pytest.raises(ConfigError, match="8 GiB"):
        TrainConfig.flat(**base, model="transformer", layers=1, width=16384, heads=1,
                         mlp_width=1).validate()


@pytest.mark.parametrize("options", [
    TransformerOptions(), TransformerOptions(layers=2, width=12, heads=3, mlp_width=7,
                                             max_examples=9)])
def test_the_transformers_declared_parameter_count_is_what_it_builds(
        options: TransformerOptions) -> None:
    model = Transformer.create(3, options, torch.Generator().manual_seed(0))
    assert Transformer.parameter_count(options, 3) == sum(p.numel() for p in
                                                          model.parameters())


def _sweep(tmp_path: Path, group: str, capsys: pytest.CaptureFixture[str]) -> str:
    (tmp_path / "s.toml").write_text('[[groups]]\nname = "g"\nd = 2\nn = 5\nsteps = 5\n'
                                     'batch = 8\neval_prompts = 100\n' + group)
    code = main(["sweep", str(tmp_path / "s.toml"), "--out", str(tmp_path / "out"),
                 "--quiet"])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (out, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]
    return err


def test_a_sweep_refuses_an_indivisible_transformer_width_before_any_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _sweep(tmp_path, 'model = "transformer"\nlayers = 1\nheads = 2\nwidth = [8, 9]\n',
                 capsys)
    assert "group 'g'" in err and "width (9) must be divisible by heads (2)" in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_a_sweep_refuses_cuda_on_a_machine_without_it_before_any_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _sweep(tmp_path, 'device = "cuda"\n', capsys)
    assert "group 'g'" in err and "CUDA is not available" in err
