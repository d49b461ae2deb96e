"""relu_width (the two-layer-relu family's hidden width, once ``width``) beside the
transformer's ``width``: old configs load, old hashes stay, the CLI names both."""

from __future__ import annotations

import pytest

from iclab.config.train import TrainConfig
from iclab.utils.errors import ConfigError

# hashes of iclab before the rename (computed on main with width as the task's field)
OLD_HASHES = {"lsa d=5 n=20 sigma=0.5": "8b261883356bce96",
              "lsa two-layer-relu width=5": "b13b4e60bc03c9c7"}


def test_old_configs_load_and_keep_their_hash() -> None:
    plain = TrainConfig.from_json({"d": 5, "n": 20, "sigma": 0.5, "width": None})
    assert plain.hash() == OLD_HASHES["lsa d=5 n=20 sigma=0.5"]
    assert TrainConfig.flat(d=5, n=20, sigma=0.5).hash() == plain.hash()
    relu = TrainConfig.from_json({"d": 5, "n": 20, "sigma": 0.5, "family": "two-layer-relu",
                                  "width": 5})
    assert relu.task.relu_width == 5 and relu.to_json()["width"] == 5  # the old key
    assert "relu_width" not in relu.to_json()
    assert relu.hash() == OLD_HASHES["lsa two-layer-relu width=5"]
    new = TrainConfig.flat(d=5, n=20, sigma=0.5, family="two-layer-relu", relu_width=5)
    assert new.hash() == relu.hash() and new.make_task().width == 5  # type: ignore[attr-defined]


def test_the_transformer_owns_width() -> None:
    config = TrainConfig.flat(model="transformer", d=5, n=20, width=32, heads=2,
                              family="two-layer-relu", relu_width=7)
    assert config.model.width == 32 and config.task.relu_width == 7
    assert config.make_task().width == 7  # type: ignore[attr-defined]
    assert TrainConfig.from_json(config.to_json()) == config
    assert config.to_json()["relu_width"] == 7 and config.to_json()["width"] == 32


def test_conflicting_old_and_new_keys_are_one_line() -> None:
    with pytest.raises(ConfigError, match="relu_width"):
        TrainConfig.flat(d=2, n=3, family="two-layer-relu", width=4, relu_width=5)
    with pytest.raises(ConfigError, match="width applies only to family two-layer-relu"):
        TrainConfig.flat(d=2, n=3, relu_width=4).validate()
