"""``iclab theory --shift``: the optimal LSA's exact loss under shifted test laws beside the Bayes
loss of each test law, against an independent numpy Monte Carlo and the bounds derived in
docs/theory.md section 13."""

from __future__ import annotations

import json
import math
from itertools import pairwise
from typing import Any

import numpy as np
import pytest

from iclab.cli.main import main


def shift_rows(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    code = main(["theory", *argv, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    rows: list[dict[str, Any]] = json.loads(captured.out)["rows"]
    return rows


def growth_monte_carlo(d: int, n: int, sigma: float, prompts: int, seed: int
                       ) -> tuple[float, float]:
    """(growth, standard error) of (L_lsa / L_bayes at w-scale 4) / (the same at 1), from
    prompts drawn here: the LSA is one GD step with Theorem 1's eta = 1/(n+d+1+sigma^2), the
    Bayes predictor the posterior mean (X^T X + sigma^2/c^2 I)^-1 X^T y of w ~ N(0, c^2 I). Each
    prompt's loss is averaged over its query exactly: |v - w|^2 + sigma^2 for a prediction
    x_q^T v with x_q ~ N(0, I). The two scales share X, the noise and w / c."""
    rng = np.random.default_rng(seed)
    eta = 1 / (n + d + 1 + sigma**2)
    per_prompt: dict[str, list[np.ndarray]] = {"a1": [], "b1": [], "a4": [], "b4": []}
    chunk = max(1, 2_000_000 // (n * d))
    done = 0
    while done < prompts:
        size = min(chunk, prompts - done)
        X = rng.standard_normal((size, n, d))
        z = rng.standard_normal((size, d))
        noise = sigma * rng.standard_normal((size, n))
        gram = np.einsum("bni,bnj->bij", X, X)
        for c in (1.0, 4.0):
            w = c * z
            y = np.einsum("bnd,bd->bn", X, w) + noise
            Xy = np.einsum("bnd,bn->bd", X, y)
            ridge = np.linalg.solve(gram + (sigma / c) ** 2 * np.eye(d), Xy[..., None])[..., 0]
            per_prompt[f"a{c:g}"].append(((eta * Xy - w) ** 2).sum(-1) + sigma**2)
            per_prompt[f"b{c:g}"].append(((ridge - w) ** 2).sum(-1) + sigma**2)
        done += size
    v = {key: np.concatenate(parts) for key, parts in per_prompt.items()}
    m = {key: float(values.mean()) for key, values in v.items()}
    growth = (m["a4"] / m["b4"]) / (m["a1"] / m["b1"])
    influence = v["a4"] / m["a4"] - v["b4"] / m["b4"] - v["a1"] / m["a1"] + v["b1"] / m["b1"]
    return growth, growth * float(influence.std(ddof=1)) / math.sqrt(prompts)


def test_the_growth_under_task_shift_falls_with_n_and_matches_an_independent_monte_carlo(
    capsys: pytest.CaptureFixture[str]
) -> None:
    growths = []
    for n in (20, 80, 320, 1280):
        rows = shift_rows(["--shift", "w-scale", "--values", "1,4", "--d", "5", "--n", str(n),
                           "--sigma", "0.5"], capsys)
        assert [row["value"] for row in rows] == [1.0, 4.0]
        for row in rows:
            assert row["ratio"] == pytest.approx(row["lsa_loss"] / row["bayes_loss"], rel=1e-12)
        growth = rows[1]["ratio"] / rows[0]["ratio"]
        expected, stderr = growth_monte_carlo(5, n, 0.5, 20_000, seed=n)
        assert abs(growth - expected) <= 4 * stderr, (n, growth, expected, stderr)
        assert stderr <= 0.01 * growth                      # resolved, at every n
        growths.append(growth)
    assert all(later < earlier for earlier, later in pairwise(growths))
    assert growths[0] > 12 and growths[-1] < 2.5            # about 12.9 and 2.28


def test_the_lsa_loss_under_task_shift_is_a_quadratic_in_c_and_the_bayes_loss_saturates(
    capsys: pytest.CaptureFixture[str]
) -> None:
    d, n, sigma = 5, 20, 0.5
    values = [0.5, 1, 2, 4, 8, 16]
    rows = shift_rows(["--shift", "w-scale", "--values", ",".join(map(str, values)), "--d",
                       str(d), "--n", str(n), "--sigma", str(sigma)], capsys)
    eta = 1 / (n + d + 1 + sigma**2)
    noise_part = sigma**2 * (1 + n * d * eta**2)        # the loss at c = 0 (docs/theory.md 13.2)
    at_one = rows[1]["lsa_loss"]
    ols = sigma**2 * (1 + d / (n - d - 1))              # the Bayes loss as c grows without bound
    for c, row in zip(values, rows, strict=True):
        assert row["lsa_loss"] == pytest.approx(c**2 * (at_one - noise_part) + noise_part,
                                                rel=1e-12)
        assert row["bayes_loss"] <= ols + 4 * row["bayes_loss_stderr"]
    bayes = [row["bayes_loss"] for row in rows]
    assert all(later > earlier for earlier, later in pairwise(bayes))
    assert bayes[-1] == pytest.approx(ols, rel=0.01)
    ratios = [row["ratio"] for row in rows]
    assert ratios[-1] / ratios[-2] == pytest.approx(4, rel=0.02)  # like c^2 once saturated


def test_the_ratio_under_query_shift_stays_within_its_derived_bound(
    capsys: pytest.CaptureFixture[str]
) -> None:
    sigma = 0.5
    values = [0.125, 0.25, 1, 4, 16, 64]
    rows = shift_rows(["--shift", "query-scale", "--values", ",".join(map(str, values)),
                       "--d", "5", "--n", "20", "--sigma", str(sigma)], capsys)
    one = rows[2]
    a, b = one["lsa_loss"] - sigma**2, one["bayes_loss"] - sigma**2
    bound = a / b                                        # docs/theory.md section 13.1
    for c, row in zip(values, rows, strict=True):
        assert row["lsa_loss"] == pytest.approx(c**2 * a + sigma**2, rel=1e-12)
        assert row["bayes_loss"] == pytest.approx(c**2 * b + sigma**2, rel=1e-9)
        assert 1 < row["ratio"] < bound
    ratios = [row["ratio"] for row in rows]
    assert all(later > earlier for earlier, later in pairwise(ratios))
    assert ratios[0] - 1 < 0.01 * (bound - 1) and ratios[-1] > 0.999 * bound  # both limits
    assert 13 < bound < 14.5                                     # about 13.7 at n = 20


def test_the_readable_table_and_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["theory", "--d", "3", "--n", "10", "--sigma", "0.5", "--shift", "w-mean",
                 "--values", "0,2", "--bayes-prompts", "500"]) == 0
    out = capsys.readouterr().out
    assert "under the w-mean shift" in out and "ratio" in out
    for argv, message in [
        (["--shift", "w-scale"], "--shift and --values go together"),
        (["--values", "1,2"], "--shift and --values go together"),
        (["--shift", "tilt", "--values", "1"], "unknown shift kind 'tilt'"),
        (["--shift", "w-scale", "--values", "1,-2"], "value -2.0 is not allowed"),
        (["--shift", "n", "--values", "2,2"], "repeats a value"),
        (["--family", "relu", "--shift", "n", "--values", "2"], "needs a linear Gaussian"),
        (["--x-law", "uniform", "--shift", "n", "--values", "2"], "needs a linear Gaussian"),
    ]:
        code = main(["theory", "--d", "3", "--n", "10", "--sigma", "0.5", *argv])
        captured = capsys.readouterr()
        assert code == 2 and captured.out == "", argv
        assert message in captured.err and captured.err.count("\n") == 1, captured.err
