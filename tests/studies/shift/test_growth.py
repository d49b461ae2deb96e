"""The growth of the ratio to the Bayes loss: its delta-method standard error against a
simulation, the exact growth against ``iclab theory --shift``'s rows, and the figures."""

from __future__ import annotations

import math
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from iclab.studies.shift.growth import (
    FIGURE_BAYES_STDERR,
    exact_growth,
    exact_precision,
    growth_figure,
    growth_over_n,
    growth_over_n_figure,
    measured_growth,
)
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.errors import ConfigError


def rows(losses: list[float], bayes: list[float], se: float) -> list[dict[str, float]]:
    return [{"value": float(v), "model_loss": m, "model_loss_stderr": se * m,
             "bayes_loss": b, "bayes_loss_stderr": se * b}
            for v, m, b in zip([1, 2], losses, bayes, strict=True)]


def test_growth_and_its_standard_error_against_a_simulation() -> None:
    losses, bayes, se = [2.0, 10.0], [0.5, 0.8], 0.01
    growth = measured_growth(rows(losses, bayes, se), 1.0)
    assert growth[1.0] == (1.0, 0.0)
    assert growth[2.0][0] == pytest.approx((10 / 0.8) / (2 / 0.5), rel=1e-12)
    rng = np.random.default_rng(3)                  # four independent losses, each se 1 %
    draws = [np.asarray(x) * (1 + se * rng.standard_normal(200_000))
             for x in (*losses, *bayes)]
    simulated = (draws[1] / draws[3]) / (draws[0] / draws[2])
    assert growth[2.0][1] == pytest.approx(simulated.std(), rel=0.02)


def test_the_exact_curve_is_sized_by_the_measured_growths_standard_error() -> None:
    first = measured_growth(rows([1.0, 2.0], [0.5, 0.5], 0.01), 1.0)
    second = measured_growth(rows([1.0, 2.0], [0.5, 0.5], 0.004), 1.0)
    # growth's relative se: hypot of four 1 % (or 0.4 %) relative errors = 2 % (0.8 %)
    assert exact_precision([first, second], 1.0) == pytest.approx(0.1 * 0.008, rel=1e-9)
    assert exact_precision([first], 1.0) == pytest.approx(0.1 * 0.02, rel=1e-9)
    with pytest.raises(ConfigError, match="no standard error away from the training value 1"):
        exact_precision([measured_growth(rows([1.0, 2.0], [0.5, 0.5], 0.0), 1.0)], 1.0)


def test_refusals() -> None:
    with pytest.raises(ConfigError, match="training value 3"):
        measured_growth(rows([1.0, 2.0], [0.5, 0.5], 0.01), 3.0)
    with pytest.raises(ConfigError, match="positive Bayes loss"):
        measured_growth(rows([1.0, 2.0], [0.0, 0.5], 0.01), 1.0)


def test_exact_growth_is_the_ratio_of_the_theory_rows_and_falls_with_n(tmp_path: Path) -> None:
    task = LinearGaussian(5, 20, 0.5)
    growth = exact_growth(task, "w-scale", [1.0, 4.0], 1.0, relative=5e-4)
    assert growth[4.0][0] == pytest.approx(12.937, rel=3e-3)    # docs/theory.md section 13.2
    # two Bayes risks, each to 0.05 % of itself: the ratio's at most sqrt(2) x 0.05 %
    assert 0 < growth[4.0][1] <= 2**0.5 * 5e-4 * growth[4.0][0]
    coarse = exact_growth(task, "w-scale", [1.0, 4.0], 1.0, relative=5e-3)  # fewer draws
    assert 1.5 * growth[4.0][1] < coarse[4.0][1] <= 2**0.5 * 5e-3 * coarse[4.0][0]
    over_n = growth_over_n(task, [20, 80, 320, 1280], 4.0)
    at_20 = exact_growth(task, "w-scale", [4.0], 1.0, relative=FIGURE_BAYES_STDERR)[4.0]
    assert over_n[0] == pytest.approx(at_20[0], rel=1e-12)
    assert abs(over_n[0] - growth[4.0][0]) < 4 * math.hypot(at_20[1], growth[4.0][1])
    assert all(b < a for a, b in pairwise(over_n))
    growth_over_n_figure([20, 80, 320, 1280], over_n, {20: [12.5, 13.2]}, 4.0,
                         tmp_path / "n.png")
    growth_figure("w-scale", {"lsa": growth}, growth, "t", tmp_path / "g.png")
    assert (tmp_path / "n.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"
