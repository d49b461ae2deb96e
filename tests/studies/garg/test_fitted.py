"""Garg et al.'s family baselines, each against an independent computation: Lasso recovers a
sparse w from noiseless examples (and agrees with a plain-numpy coordinate descent), boosted
trees fit a depth-1 tree, the fitted ReLU network lowers its training loss and is seeded; every
family's baselines run on every prefix k = 0..n."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclab.studies.garg.fitted import BoostedTreesPredictor, LassoPredictor, ReluNetworkFit
from iclab.studies.transformer.family_baselines import family_baselines, prompt_limit
from iclab.tasks.registry import FamilyRegistry
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

pytestmark = pytest.mark.usefixtures("one_thread")


def numpy_lasso(X: np.ndarray, y: np.ndarray, alpha: float, sweeps: int = 5000) -> np.ndarray:
    """Cyclic coordinate descent on 1/(2k) ||y - X w||^2 + alpha ||w||_1."""
    k, d = X.shape
    w = np.zeros(d)
    for _ in range(sweeps):
        before = w.copy()
        for j in range(d):
            residual = y - X @ w + X[:, j] * w[j]
            rho = X[:, j] @ residual / k
            w[j] = np.sign(rho) * max(abs(rho) - alpha, 0.0) / (X[:, j] @ X[:, j] / k)
        if np.max(np.abs(w - before)) < 1e-12:
            break
    return w


def test_lasso_recovers_a_sparse_w_and_matches_coordinate_descent() -> None:
    generator = torch.Generator().manual_seed(0)
    X = torch.randn(3, 40, 10, generator=generator, dtype=torch.float64)
    w = torch.zeros(3, 10, dtype=torch.float64)
    w[:, [1, 7]] = torch.tensor([1.5, -2.0], dtype=torch.float64)
    y = torch.einsum("bkd,bd->bk", X, w)
    lasso = LassoPredictor(alpha=0.01)
    w_hat = lasso.fit(X, y)
    assert torch.allclose(w_hat, w, atol=0.05)                # shrinkage of order alpha
    for row in range(3):
        reference = numpy_lasso(X[row].numpy(), y[row].numpy(), 0.01)
        assert np.allclose(w_hat[row].numpy(), reference, atol=1e-4)
    x_q = torch.randn(3, 10, generator=generator, dtype=torch.float64)
    assert torch.allclose(lasso.predict(X, y, x_q), (w_hat * x_q).sum(-1))
    assert torch.equal(lasso.predict(X[:, :0], y[:, :0], x_q), torch.zeros(3,
                                                                           dtype=torch.float64))


def test_boosted_trees_fit_a_depth_one_tree() -> None:
    generator = torch.Generator().manual_seed(1)
    X = torch.randn(4, 40, 3, generator=generator, dtype=torch.float64)
    y = torch.where(X[..., 0] > 0, 1.0, -1.0)
    x_q = torch.randn(4, 3, generator=generator, dtype=torch.float64)
    x_q[:, 0] = torch.tensor([-1.0, -0.6, 0.6, 1.0], dtype=torch.float64)
    predictor = BoostedTreesPredictor(seed=0, trees=30, learning_rate=0.1)
    yhat = predictor.predict(X, y, x_q)
    # every tree splits x_0 at 0 and moves each side a fraction 0.1 of its residual, from the
    # mean of y: after 30 trees the prediction is mean + (1 - 0.9^30) (target - mean)
    target = torch.tensor([-1.0, -1.0, 1.0, 1.0], dtype=torch.float64)
    mean = y.mean(1)
    assert torch.allclose(yhat, mean + (1 - 0.9**30) * (target - mean), atol=1e-9)
    assert torch.equal(yhat, predictor.predict(X, y, x_q))
    assert torch.equal(predictor.predict(X[:, :0], y[:, :0], x_q), torch.zeros(4,
                                                                              dtype=torch.float64))


def test_relu_fit_lowers_its_training_loss_and_is_seeded() -> None:
    task = FamilyRegistry().make_family("relu-network", 3, 20, 0.0)
    p = task.sample_prompts(8, make_generator(0, "fit"))
    fit = ReluNetworkFit(seed=3)
    _, losses = fit.fit(p.X, p.y)
    assert len(losses) == 101 and losses[-1] < 0.2 * losses[0]
    first = fit.predict(p.X, p.y, p.x_q)
    assert torch.equal(first, ReluNetworkFit(seed=3).predict(p.X, p.y, p.x_q))
    assert not torch.equal(first, ReluNetworkFit(seed=4).predict(p.X, p.y, p.x_q))
    with torch.inference_mode():                 # usable inside an evaluation's inference mode
        assert torch.equal(first, fit.predict(p.X.clone(), p.y.clone(), p.x_q.clone()))


@pytest.mark.parametrize(("family", "names"), [("sparse-linear", ["lasso"]),
                                               ("decision-tree", ["gradient-boosting"]),
                                               ("relu-network", ["relu-network-fit"])])
def test_each_family_baseline_runs_on_every_prefix(family: str, names: list[str]) -> None:
    n = 6
    task = FamilyRegistry().make_family(family, 3, n, 0.1)
    predictors = family_baselines(task, seed=0)
    assert [p.name for p in predictors] == names
    prompts = task.sample_prompts(4, make_generator(1, "prefix"))
    for predictor in predictors:
        assert getattr(predictor, "max_prompts", None) is None or predictor.max_prompts >= 4
        for k in range(n + 1):
            yhat = predictor(prompts.X[:, :k], prompts.y[:, :k], prompts.x_q)
            assert yhat.shape == (4,) and yhat.dtype == prompts.y.dtype
            assert bool(torch.isfinite(yhat).all())
            if k == 0:
                assert torch.equal(yhat, torch.zeros(4))


def test_baselines_that_are_not_factories_are_one_config_error() -> None:
    class Named:
        name = "custom"
        baselines = ("nope",)

    with pytest.raises(ConfigError, match="baselines must be a tuple of factories"):
        family_baselines(Named(), 0)  # type: ignore[arg-type]


def test_each_garg_family_declares_its_own_fitted_baseline() -> None:
    from iclab.studies.garg.families import DecisionTreeTask, ReluNetworkTask, SparseLinearTask

    made = {cls.__name__: [b.name for b in family_baselines(cls(4, 8, 0.0), 0)]
            for cls in (SparseLinearTask, DecisionTreeTask, ReluNetworkTask)}
    assert made == {"SparseLinearTask": ["lasso"], "DecisionTreeTask": ["gradient-boosting"],
                    "ReluNetworkTask": ["relu-network-fit"]}


def test_prompt_limit() -> None:
    assert prompt_limit(BoostedTreesPredictor(max_prompts=32), 5000) == 32
    assert prompt_limit(BoostedTreesPredictor(max_prompts=32), 10) == 10
    assert prompt_limit(ReluNetworkFit(), 5000) == 1000
    assert prompt_limit(ReluNetworkFit(max_prompts=None), 5000) == 5000
    assert prompt_limit(LassoPredictor(), 5000) == 256
