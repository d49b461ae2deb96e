"""Options belong to their owner: two-layer-relu's ``width`` and the transformer's ``width``
live side by side (the family's key qualified as ``relu_width`` beside the transformer only),
old configs load and keep their hash, and the command line names each option's owner."""

from __future__ import annotations

import pytest

from iclab.cli.main import main
from iclab.config.train import TrainConfig
from iclab.utils.errors import ConfigError

# hashes written by iclab before families declared their own options (main 19fa53e)
OLD_HASHES = {"lsa d=5 n=20 sigma=0.5": "8b261883356bce96",
              "lsa two-layer-relu width=5": "b13b4e60bc03c9c7"}


def test_old_configs_load_and_keep_their_hash() -> None:
    plain = TrainConfig.from_json({"d": 5, "n": 20, "sigma": 0.5, "width": None})
    assert plain.hash() == OLD_HASHES["lsa d=5 n=20 sigma=0.5"]
    assert TrainConfig.flat(d=5, n=20, sigma=0.5).hash() == plain.hash()
    relu = TrainConfig.from_json({"d": 5, "n": 20, "sigma": 0.5, "family": "two-layer-relu",
                                  "width": 5})
    assert relu.to_json()["width"] == 5 and "relu_width" not in relu.to_json()
    assert relu.hash() == OLD_HASHES["lsa two-layer-relu width=5"]
    assert relu.make_task().width == 5  # type: ignore[attr-defined]


def test_the_transformer_and_the_family_each_own_a_width() -> None:
    config = TrainConfig.flat(model="transformer", d=5, n=20, width=32, heads=2,
                              family="two-layer-relu", relu_width=7)
    assert config.model.width == 32
    assert config.make_task().width == 7  # type: ignore[attr-defined]
    assert TrainConfig.from_json(config.to_json()) == config
    assert config.to_json()["relu_width"] == 7 and config.to_json()["width"] == 32
    plain = TrainConfig.flat(model="transformer", d=5, n=20, heads=2, family="two-layer-relu")
    assert "relu_width" not in plain.to_json() and plain.make_task().width == 8  # type: ignore[attr-defined]


def test_a_key_of_another_owner_is_one_line() -> None:
    with pytest.raises(ConfigError, match="width applies only to family two-layer-relu"):
        TrainConfig.flat(d=2, n=3, width=4)
    with pytest.raises(ConfigError, match="unknown config keys"):
        TrainConfig.flat(d=2, n=3, family="two-layer-relu", relu_width=4)  # lsa: it is width
    with pytest.raises(ConfigError, match="sparsity applies only to family sparse-linear"):
        TrainConfig.flat(d=2, n=3, family="relu", sparsity=2)


def test_each_model_and_family_shows_only_its_own_options(
        capsys: pytest.CaptureFixture[str]) -> None:
    def help_of(*argv: str) -> str:
        assert main(["train", *argv, "--help"]) == 0
        return " ".join(capsys.readouterr().out.split())

    lsa, transformer = help_of(), help_of("--model", "transformer")
    assert "--key-dim" in lsa and "--layers" in lsa and "--mlp-width" not in lsa
    assert "--mlp-width" in transformer and "--key-dim" not in transformer
    assert "--width INTEGER" in transformer and "[default: 64]" in transformer
    assert "--width" not in lsa and "--sparsity" not in lsa
    relu = help_of("--family", "two-layer-relu")
    assert "--width INTEGER" in relu and "two-layer-relu [default: 8]" in relu
    both = help_of("--model", "transformer", "--family", "two-layer-relu")
    assert "--relu-width" in both and "Residual stream width" in both
    assert "--sparsity" in help_of("--family", "sparse-linear")
