"""The generic prefix baselines against plain numpy, and which apply to which family."""

from __future__ import annotations

import numpy as np
import torch

from iclab.studies.transformer.generic_baselines import (
    Averaging,
    NearestNeighbours,
    RidgeAtPrior,
    TheoremOneGD,
    generic_baselines,
)
from iclab.tasks.registry import make_family


def _prompt(batch: int = 6, n: int = 7, d: int = 3) -> tuple[torch.Tensor, ...]:
    rng = np.random.default_rng(4)
    X, y, x_q = rng.standard_normal((batch, n, d)), rng.standard_normal((batch, n)), \
        rng.standard_normal((batch, d))
    return tuple(torch.as_tensor(a) for a in (X, y, x_q))


def test_averaging_ridge_and_gd_against_numpy() -> None:
    X, y, x_q = _prompt()
    Xn, yn, qn = X.numpy(), y.numpy(), x_q.numpy()
    mean = np.einsum("bnd,bn->bd", Xn, yn) / 7
    assert np.allclose(Averaging().predict(X, y, x_q).numpy(), (mean * qn).sum(-1))
    for b in range(6):
        w = np.linalg.solve(Xn[b].T @ Xn[b] + 0.25 * np.eye(3), Xn[b].T @ yn[b])
        assert np.isclose(float(RidgeAtPrior(0.5).predict(X, y, x_q)[b]), w @ qn[b])
        w0 = np.linalg.lstsq(Xn[b], yn[b], rcond=None)[0]
        assert np.isclose(float(RidgeAtPrior(0.0).predict(X, y, x_q)[b]), w0 @ qn[b])
    gd = (np.einsum("bnd,bn->bd", Xn, yn) * qn).sum(-1) / (7 + 3 + 1 + 0.25)
    assert np.allclose(TheoremOneGD(0.5).predict(X, y, x_q).numpy(), gd)


def test_nearest_neighbours_against_a_loop() -> None:
    X, y, x_q = _prompt()
    got = NearestNeighbours(3).predict(X, y, x_q).numpy()
    for b in range(6):
        order = np.argsort(((X[b] - x_q[b]) ** 2).sum(-1).numpy())
        assert np.isclose(got[b], y[b].numpy()[order[:3]].mean())
    few = NearestNeighbours(3).predict(X[:, :2], y[:, :2], x_q).numpy()
    assert np.allclose(few, y[:, :2].numpy().mean(-1))
    assert torch.equal(NearestNeighbours().predict(X[:, :0], y[:, :0], x_q), torch.zeros(6,
                                                                                          dtype=X.dtype))


def test_which_baselines_apply() -> None:
    iso = [b.name for b in generic_baselines(make_family("linear-gaussian", 3, 5, 0.5))]
    assert iso == ["ols", "ridge", "averaging", "3-nn", "bayes", "one-step-gd"]
    relu = [b.name for b in generic_baselines(make_family("relu", 3, 5, 0.5))]
    assert relu == ["ols", "ridge", "averaging", "3-nn"]
    aniso = [b.name for b in generic_baselines(make_family("anisotropic", 3, 5, 0.5))]
    assert aniso == ["ols", "ridge", "averaging", "3-nn", "bayes"]
