"""The span fit refuses prompt counts it cannot use, and work it cannot finish: both sides."""

from __future__ import annotations

import pytest

from iclab.theory.span import MAX_DRAWN, check_prompt_counts, feature_count
from iclab.utils.errors import ConfigError


def test_the_fit_needs_a_hundred_prompts_per_feature() -> None:
    floor = 100 * feature_count(2)                 # 12 features at d = 2
    assert check_prompt_counts(2, floor, 100) == floor
    for fit in (2, floor - 1):
        with pytest.raises(ConfigError, match=f"fit_prompts must be an integer from {floor}"):
            check_prompt_counts(2, fit, 100)


def test_prompts_too_long_to_draw_are_refused_before_any_work() -> None:
    fit, test = 200_000, 200_000
    longest = int(MAX_DRAWN // ((fit + test) * 3)) - 1  # tokens per prompt at d = 2
    assert check_prompt_counts(2, fit, test, n=longest - 1) == fit
    with pytest.raises(ConfigError, match=r"the span fit at d = 2, n = 1000000 would draw"):
        check_prompt_counts(2, fit, test, n=1_000_000)
    assert check_prompt_counts(2, fit, test) == fit     # n unknown: counts only
