"""The cross-fitted ridge probe: R^2 1 for an exact linear target, the population R^2 of a
noisy one within its standard error, about 0 for noise, and seeded folds."""

from __future__ import annotations

import numpy as np
import pytest

from iclab.studies.probes.linear_probes import fit_probes, fold_ids

COUNT = 3000


def data() -> tuple[np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    features = rng.normal(size=(COUNT, 8))
    coef = rng.normal(size=(8, 2))
    signal = features @ coef
    # noise of the signal's variance per column: population R^2 = 1/2 exactly
    noise = rng.normal(size=(COUNT, 2)) * np.sqrt((coef ** 2).sum(0))
    return features, {"exact": signal + 3.0, "half": signal + noise,
                      "noise": rng.normal(size=(COUNT, 3))}


def test_scores_against_the_population_r2() -> None:
    features, targets = data()
    scores = fit_probes(features, targets, folds=5, seed=0)
    assert scores["exact"].r2 == pytest.approx(1.0, abs=1e-9)
    half = scores["half"]
    assert abs(half.r2 - 0.5) < 3 * half.se and 0 < half.se < 0.02
    noise = scores["noise"]
    assert abs(noise.r2) < 3 * noise.se + 2e-3 and noise.r2 < 0.01


def test_a_nonlinear_target_is_not_linearly_decodable() -> None:
    """x_1 * x_2 has no linear part: R^2 about 0, while x_1 + x_2 has R^2 1."""
    features, _ = data()
    scores = fit_probes(features, {"product": features[:, :1] * features[:, 1:2],
                                   "sum": features[:, :1] + features[:, 1:2]}, 5, 0)
    assert scores["product"].r2 < 0.01 and scores["sum"].r2 > 0.999


def test_folds_are_balanced_and_seeded() -> None:
    ids = fold_ids(103, 5, seed=1)
    assert sorted(np.bincount(ids)) == [20, 20, 21, 21, 21]
    assert np.array_equal(ids, fold_ids(103, 5, seed=1))
    assert not np.array_equal(ids, fold_ids(103, 5, seed=2))
