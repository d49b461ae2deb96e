import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclab.tasks.base import Prompts, check_scalars
from iclab.utils.errors import ConfigError


def test_prompts_shapes_and_dtype_conversion() -> None:
    prompts = Prompts(torch.zeros(4, 7, 3), torch.zeros(4, 7), torch.zeros(4, 3), torch.zeros(4))
    assert (prompts.batch, prompts.n, prompts.d) == (4, 7, 3)
    as64 = prompts.to(torch.float64)
    assert {t.dtype for t in (as64.X, as64.y, as64.x_q, as64.y_q)} == {torch.float64}


@given(st.integers(-3, 5), st.integers(-3, 5), st.floats(allow_nan=True, allow_infinity=True))
def test_check_scalars_accepts_exactly_the_allowed_values(d: int, n: int, sigma: float) -> None:
    allowed = d >= 1 and n >= 1 and math.isfinite(sigma) and sigma >= 0
    if allowed:
        check_scalars(d, n, sigma)
    else:
        with pytest.raises(ConfigError) as info:
            check_scalars(d, n, sigma)
        assert "\n" not in str(info.value)


def test_booleans_and_strings_are_not_numbers() -> None:
    with pytest.raises(ConfigError, match="d must be an integer"):
        check_scalars(True, 3, 0.0)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="sigma must be a finite number"):
        check_scalars(2, 3, "0.5")  # type: ignore[arg-type]
