import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from iclab.errors import ConfigError
from iclab.training.config import TrainConfig


def test_json_round_trip_and_defaults() -> None:
    config = TrainConfig(d=3, n=5, sigma=0.5, cov_x=np.diag([1.0, 2.0, 3.0]).tolist())
    again = TrainConfig.from_json(config.to_json())
    assert again == config
    assert config.resolved_sampler == "statistics"
    assert config.task().sigma_x[2, 2] == 3.0


def test_unknown_keys_are_named() -> None:
    with pytest.raises(ConfigError, match="bogus"):
        TrainConfig.from_json({"d": 1, "n": 1, "sigma": 0.0, "bogus": 1})


def test_cosine_schedule_starts_at_lr_and_decays_to_zero() -> None:
    config = TrainConfig(d=2, n=2, sigma=0.0, steps=100, lr=0.02)
    assert config.learning_rate(0) == 0.02
    assert config.learning_rate(50) == pytest.approx(0.01)
    assert config.learning_rate(99) == pytest.approx(0.02 * 0.5 * (1 + math.cos(math.pi * 0.99)))
    constant = TrainConfig(d=2, n=2, sigma=0.0, lr_schedule="constant")
    assert constant.learning_rate(1000) == constant.lr


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("d", 0, "d must be an integer >= 1, got 0"),
        ("n", 0, "n must be an integer >= 1, got 0"),
        ("sigma", -1.0, "sigma must be a finite number >= 0.0, got -1.0"),
        ("sigma", math.inf, "sigma must be a finite number"),
        ("steps", 0, "steps must be"),
        ("batch", -3, "batch must be"),
        ("lr", 0.0, "lr must be a finite number > 0.0"),
        ("device", "tpu", "device must be one of cpu, cuda"),
        ("sampler", "magic", "sampler must be one of"),
        ("lr_schedule", "step", "lr_schedule must be one of"),
        ("family", "quadratic", "unknown family 'quadratic'; allowed: linear-gaussian"),
        ("key_dim", 0, "key_dim must be"),
    ],
)
def test_each_bad_value_is_named(field: str, value: object, fragment: str) -> None:
    config = TrainConfig(**{"d": 2, "n": 3, "sigma": 0.1, field: value})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="^" + fragment.replace("(", r"\(").replace(")", r"\)")):
        config.validate()


@given(st.integers(-100, 100), st.integers(-100, 100), st.floats(allow_nan=True))
def test_validation_accepts_exactly_the_allowed_region(d: int, n: int, sigma: float) -> None:
    config = TrainConfig(d=d, n=n, sigma=sigma)
    allowed = d >= 1 and n >= 1 and math.isfinite(sigma) and sigma >= 0
    if allowed and d <= 50:
        assert config.validate() is config
    elif not allowed:
        with pytest.raises(ConfigError):
            config.validate()
