"""The probe targets against their formulas, computed here in numpy on the same prompts:
w_OLS from the normal equations, w_ridge from its closed form, the GD iterates by their
recursion with Theorem 1's step 1/(n + d + 1 + sigma^2), and the moments."""

from __future__ import annotations

import numpy as np
import pytest

from iclab.studies.probes.targets import (
    ALL_TARGETS,
    check_targets,
    compute_targets,
    draw_prompts,
    gd_steps,
)
from iclab.tasks.registry import FamilyRegistry
from iclab.utils.errors import ConfigError

D, N, SIGMA = 4, 12, 0.5


def linear() -> object:
    return FamilyRegistry().make_family("linear-gaussian", D, N, SIGMA)


def test_targets_match_their_formulas() -> None:
    task = linear()
    drawn = draw_prompts(task, 50, seed=3)
    values = compute_targets(drawn, ALL_TARGETS, task, lam=0.7)
    X, y = drawn.prompts.X.numpy(), drawn.prompts.y.numpy()
    x_q, w = drawn.prompts.x_q.numpy(), drawn.w.numpy()
    eta = 1.0 / (N + D + 1 + SIGMA ** 2)               # Theorem 1 (docs/theory.md section 4)
    steps = gd_steps(task)
    assert steps["gd1"] == pytest.approx((eta,), rel=1e-9)
    for b in range(50):
        gram, xty = X[b].T @ X[b], X[b].T @ y[b]
        ols = np.linalg.solve(gram, xty)
        ridge = np.linalg.solve(gram + 0.7 * np.eye(D), xty)
        w1 = eta * xty
        w2 = np.zeros(D)
        for step in steps["gd2"]:
            w2 = w2 + step * X[b].T @ (y[b] - X[b] @ w2)
        expected = {"w": w[b], "w_ols": ols, "w_ridge": ridge, "gd1": w1, "gd2": w2,
                    "xty": xty, "xtx": gram[np.triu_indices(D)]}
        for name, value in expected.items():
            np.testing.assert_allclose(values[name][b], value, rtol=1e-9, atol=1e-12)
            if name in ("w", "w_ols", "w_ridge", "gd1", "gd2"):
                np.testing.assert_allclose(values[f"{name}_pred"][b], [x_q[b] @ value],
                                           rtol=1e-9, atol=1e-12)


def test_the_labels_come_from_w() -> None:
    """y - X w is the noise: sd sigma (the family's law), and exactly 0 at sigma = 0."""
    noisy = draw_prompts(linear(), 4000, seed=1)
    X, y, w = noisy.prompts.X.numpy(), noisy.prompts.y.numpy(), noisy.w.numpy()
    residual = y - np.einsum("bnd,bd->bn", X, w)
    assert residual.std() == pytest.approx(SIGMA, rel=0.02)
    exact = draw_prompts(FamilyRegistry().make_family("linear-gaussian", D, N, 0.0), 10, 1)
    np.testing.assert_allclose(exact.prompts.y.numpy(), np.einsum(
        "bnd,bd->bn", exact.prompts.X.numpy(), exact.w.numpy()), atol=1e-12)


def test_the_prompts_are_seeded() -> None:
    a, b, c = (draw_prompts(linear(), 8, seed) for seed in (5, 5, 6))
    assert np.array_equal(a.prompts.X, b.prompts.X) and np.array_equal(a.w, b.w)
    assert not np.array_equal(a.prompts.X, c.prompts.X)


def test_a_nonlinear_family_gives_the_moments_only() -> None:
    relu = FamilyRegistry().make_family("relu", D, N, 0.0)
    assert check_targets(["xty", "xtx"], relu) == ("xty", "xtx")
    with pytest.raises(ConfigError, match="target 'w_ols' needs a linear Gaussian family"):
        check_targets(["xty", "w_ols"], relu)
    drawn = draw_prompts(relu, 6, seed=0)
    values = compute_targets(drawn, ["xty"], relu, lam=0.0)
    np.testing.assert_allclose(values["xty"], np.einsum("bnd,bn->bd", drawn.prompts.X,
                                                        drawn.prompts.y))


@pytest.mark.parametrize("names", [["w", "nope"], [], ["w", "w"]])
def test_bad_target_lists_are_one_line(names: list[str]) -> None:
    with pytest.raises(ConfigError) as error:
        check_targets(names, linear())
    assert "\n" not in str(error.value)
