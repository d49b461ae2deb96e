import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from iclab.config.train import TrainConfig
from iclab.utils.errors import ConfigError

OLD_CONFIG = {  # an iclab 0.1 config.json, as written before the config had sections
    "d": 5, "n": 20, "sigma": 0.5, "cov_x": None, "cov_w": None, "family": "linear-gaussian",
    "width": None, "key_dim": None, "value_dim": None, "normalise": False,
    "attend_query": False, "init_scale": 0.1, "init": "gd-subspace", "steps": 800,
    "batch": 8192, "lr": 0.005, "lr_schedule": "cosine", "seed": 0, "sampler": "auto",
    "device": "cpu", "checkpoint_every": 500, "log_every": 50, "eval_prompts": 100000,
    "exact": False,
}


def test_an_old_flat_config_loads_and_keeps_its_keys_and_hash() -> None:
    config = TrainConfig.from_json(OLD_CONFIG)
    assert config.to_json() == OLD_CONFIG
    canonical = json.dumps(OLD_CONFIG, sort_keys=True, separators=(",", ":"))
    import hashlib
    assert config.hash() == hashlib.blake2b(canonical.encode(), digest_size=8).hexdigest()
    assert config.task.d == 5 and config.optim.steps == 800 and config.run.seed == 0
    assert config.model_name == "lsa" and config.model.init == "gd-subspace"


def test_json_round_trip_and_sections() -> None:
    config = TrainConfig.flat(d=3, n=5, sigma=0.5, cov_x=np.diag([1.0, 2.0, 3.0]).tolist())
    assert TrainConfig.from_json(config.to_json()) == config
    assert config.resolved_sampler() == "statistics"
    assert config.make_task().sigma_x[2, 2] == 3.0
    assert TrainConfig.flat(d=3, n=5, sigma=0).task.sigma == 0.0  # ints become floats


def test_unknown_keys_are_named() -> None:
    with pytest.raises(ConfigError, match="bogus"):
        TrainConfig.from_json({"d": 1, "n": 1, "sigma": 0.0, "bogus": 1})
    with pytest.raises(ConfigError, match="d is required"):
        TrainConfig.from_json({"n": 1, "sigma": 0.0})


def test_cosine_schedule_starts_at_lr_and_decays_to_zero() -> None:
    config = TrainConfig.flat(d=2, n=2, sigma=0.0, steps=100, lr=0.02)
    assert config.learning_rate(0) == 0.02
    assert config.learning_rate(50) == pytest.approx(0.01, rel=1e-12)
    assert config.learning_rate(99) == pytest.approx(0.02 * 0.0002467, rel=1e-3)
    assert TrainConfig.flat(d=2, n=2, sigma=0.0, lr_schedule="constant").learning_rate(
        1000) == 0.005


@pytest.mark.parametrize(("field", "value", "fragment"), [
    ("sigma", math.inf, "sigma must be a finite number"),
    ("sigma", math.nan, "sigma must be a finite number"),
    ("d", 2.5, "d must be an integer"),
    ("d", True, "d must be an integer"),
    ("device", "tpu", "device must be one of cpu, cuda"),
    ("sampler", "magic", "sampler must be one of auto, statistics, prompts"),
    ("lr_schedule", "step", "lr_schedule must be one of cosine, constant"),
    ("init", "zeros", "init must be one of gd-subspace, random"),
    ("normalise", "yes", "normalise must be true or false"),
])
def test_each_bad_value_is_named(field: str, value: object, fragment: str) -> None:
    with pytest.raises(ConfigError, match="^" + fragment):
        TrainConfig.flat(**{"d": 2, "n": 3, "sigma": 0.1, field: value})


def test_cross_field_rules_are_checked_by_validate() -> None:
    with pytest.raises(ConfigError, match="unknown family 'quadratic'; allowed: linear-gauss"):
        TrainConfig.flat(d=2, n=3, sigma=0.1, family="quadratic").validate()
    with pytest.raises(ConfigError, match="width applies only to family two-layer-relu"):
        TrainConfig.flat(d=2, n=3, sigma=0.1, width=3).validate()
    with pytest.raises(ConfigError, match="sampler statistics needs"):
        TrainConfig.flat(d=2, n=3, sigma=0.1, family="two-layer-relu",
                         sampler="statistics").validate()
    with pytest.raises(ConfigError, match="sampler statistics needs"):
        TrainConfig.flat(d=2, n=3, sigma=0.1, family="relu", model="softmax",
                         sampler="statistics").validate()
    relu = TrainConfig.flat(d=2, n=3, sigma=0.1, family="relu", sampler="statistics")
    relu.validate()  # relu draws Z, which both lsa models read
    assert relu.resolved_sampler() == "statistics"
    with pytest.raises(ConfigError, match="lr does not apply to exact training"):
        TrainConfig.flat(d=2, n=3, sigma=0.1, exact=True, lr=0.1).validate()
    with pytest.raises(ConfigError, match="GiB per batch"):
        TrainConfig.flat(d=4000, n=1000, sigma=0.1, batch=100_000).validate()
    TrainConfig.flat(d=4000, n=2, sigma=0.1, batch=8).validate()


@given(st.integers(-100, 100), st.integers(-100, 100), st.floats(allow_nan=True))
def test_construction_accepts_exactly_the_allowed_region(d: int, n: int, sigma: float) -> None:
    allowed = d >= 1 and n >= 1 and math.isfinite(sigma) and 0 <= sigma <= 1e4
    if allowed:
        assert TrainConfig.flat(d=d, n=n, sigma=sigma).validate().task.d == d
    else:
        with pytest.raises(ConfigError):
            TrainConfig.flat(d=d, n=n, sigma=sigma)


def test_covariate_fields_are_left_out_at_their_defaults() -> None:
    # Configs written before these fields existed keep their JSON form and hash.
    assert set(TrainConfig.from_json(OLD_CONFIG).to_json()) == set(OLD_CONFIG)
    R = (0.5 * np.eye(4) + 0.5).tolist()
    config = TrainConfig.flat(d=2, n=3, sigma=0.1, context_covariance=R)
    assert config.to_json()["context_covariance"] == R
    assert TrainConfig.from_json(config.to_json()) == config
    assert config.hash() != TrainConfig.flat(d=2, n=3, sigma=0.1).hash()
    law = TrainConfig.flat(d=2, n=3, sigma=0.1, x_law="uniform")
    assert law.to_json()["x_law"] == "uniform" and "context_correlation" not in law.to_json()


def test_covariate_fields_make_the_linear_family_and_its_sampler() -> None:
    plain = TrainConfig.flat(d=2, n=3, sigma=0.1, x_law="gaussian")
    assert plain == TrainConfig.flat(d=2, n=3, sigma=0.1)            # the default, omitted
    assert type(plain.make_task()).__name__ == "LinearGaussian"
    for keys in ({"x_law": "uniform"}, {"context_correlation": 0.5}):
        config = TrainConfig.flat(d=2, n=3, sigma=0.1, **keys).validate()
        assert type(config.make_task()).__name__ == "LinearLawTask"
        assert config.resolved_sampler() == "prompts"
    with pytest.raises(ConfigError, match=r"sampler statistics needs .* with x_law 'uniform'"):
        TrainConfig.flat(d=2, n=3, sigma=0.1, x_law="uniform", sampler="statistics").validate()
    with pytest.raises(ConfigError, match=r"exact training needs .* with correlated contexts"):
        TrainConfig.flat(d=2, n=3, sigma=0.1, context_correlation=0.2, exact=True).validate()
    with pytest.raises(ConfigError, match="x_law applies only to family linear-gaussian"):
        TrainConfig.flat(d=2, n=3, sigma=0.1, family="relu", x_law="uniform").validate()
    with pytest.raises(ConfigError, match=r"^context_correlation must be a number in"):
        TrainConfig.flat(d=2, n=3, sigma=0.1, context_correlation=1.0).validate()
    with pytest.raises(ConfigError, match=r"^x_law must be a string"):
        TrainConfig.flat(d=2, n=3, sigma=0.1, x_law=3)
