"""Garg et al.'s baselines for their own families, fitted to each prompt's examples.

- ``LassoPredictor`` (``lasso``, sparse linear regression): scikit-learn's Lasso without
  intercept, min_w 1/(2k) ||y - X w||^2 + alpha ||w||_1, alpha = 0.01 by default (Garg et al.'s
  code evaluates alpha in {1, 0.1, 0.01, 0.001, 0.0001}).
- ``BoostedTreesPredictor`` (``gradient-boosting``, decision trees): scikit-learn's
  GradientBoostingRegressor, squared error, 50 trees of depth 4 (the target trees' depth),
  learning rate 0.1, seeded (Garg et al. use XGBoost's defaults; 100 trees or a learning rate
  of 0.3 gave the same errors on decision-tree prompts at d = 10, k <= 40, benchmarks/README.md).
- ``ReluNetworkFit`` (``relu-network-fit``, two-layer ReLU networks): a network
  x -> c^T relu(W x + b) + c_0 of width 100 per prompt, initialised as torch's Linear layers
  (uniform in +-1/sqrt(fan-in)) from a seeded generator, fitted by 100 full-batch Adam steps
  (learning rate 5e-3) on the prompt's mean squared error, as Garg et al.'s baseline. All
  prompts are fitted at once: the loss is the sum of the prompts' losses and Adam acts on each
  coordinate alone, so each prompt's network follows its own fit.

With no examples (k = 0) each predicts 0, the prior mean of the families they serve. The two
scikit-learn predictors fit one prompt at a time; ``max_prompts`` is how many prompts an
evaluation should give each predictor (the prefix evaluation runs them on every k = 0..n;
``iclab.studies.transformer.family_baselines.prompt_limit``).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch

from iclab.algorithms.base import InContextPredictor
from iclab.utils.seeding import derive_seed, make_generator

DEFAULT_LASSO_ALPHA = 0.01
DEFAULT_FIT_WIDTH, DEFAULT_FIT_STEPS, DEFAULT_FIT_LR = 100, 100, 5e-3


def _numpy(values: torch.Tensor) -> np.ndarray:
    """``values`` as a float64 numpy array on the host."""
    return values.detach().to("cpu", torch.float64).numpy()


class LassoPredictor(InContextPredictor):
    """Lasso fitted to each prompt: yhat = w_hat . x_q; 0 with no examples."""

    name = "lasso"

    def __init__(self, alpha: float = DEFAULT_LASSO_ALPHA, max_iter: int = 100_000,
                 max_prompts: int = 256) -> None:
        self.alpha, self.max_iter, self.max_prompts = float(alpha), int(max_iter), max_prompts

    def fit(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """X: (B, k, d), y: (B, k) -> w_hat: (B, d) (zeros when k = 0)."""
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import Lasso

        weights = np.zeros((X.shape[0], X.shape[2]))
        if X.shape[1] == 0:
            return torch.as_tensor(weights, dtype=X.dtype, device=X.device)
        xs, ys = _numpy(X), _numpy(y)
        for row in range(X.shape[0]):
            lasso = Lasso(alpha=self.alpha, fit_intercept=False, max_iter=self.max_iter)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                lasso.fit(xs[row], ys[row])
            weights[row] = lasso.coef_
        return torch.as_tensor(weights, dtype=X.dtype, device=X.device)

    def predict(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """X: (B, k, d), y: (B, k), x_q: (B, d) -> yhat: (B,)."""
        return (self.fit(X, y) * x_q).sum(-1)


class BoostedTreesPredictor(InContextPredictor):
    """Gradient-boosted regression trees fitted to each prompt; 0 with no examples."""

    name = "gradient-boosting"

    def __init__(self, seed: int = 0, trees: int = 50, depth: int = 4,
                 learning_rate: float = 0.1, max_prompts: int = 32) -> None:
        self.seed, self.trees, self.depth = seed, trees, depth
        self.learning_rate, self.max_prompts = learning_rate, max_prompts

    def predict(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """X: (B, k, d), y: (B, k), x_q: (B, d) -> yhat: (B,)."""
        from sklearn.ensemble import GradientBoostingRegressor

        xs, ys, qs = _numpy(X), _numpy(y), _numpy(x_q)
        out = np.zeros(X.shape[0])
        if X.shape[1] > 0:
            state = derive_seed(self.seed, "gradient-boosting", X.shape[1]) % 2**31
            for row in range(X.shape[0]):
                model = GradientBoostingRegressor(
                    n_estimators=self.trees, max_depth=self.depth,
                    learning_rate=self.learning_rate, random_state=state)
                out[row] = model.fit(xs[row], ys[row]).predict(qs[row][None])[0]
        return torch.as_tensor(out, dtype=X.dtype, device=X.device)


class ReluNetworkFit(InContextPredictor):
    """A two-layer ReLU network fitted by Adam to each prompt's examples (all at once)."""

    name = "relu-network-fit"

    def __init__(self, seed: int = 0, width: int = DEFAULT_FIT_WIDTH,
                 steps: int = DEFAULT_FIT_STEPS, lr: float = DEFAULT_FIT_LR,
                 max_prompts: int | None = 1000) -> None:
        self.seed, self.width, self.steps, self.lr = seed, width, steps, lr
        self.max_prompts = max_prompts

    def initial(self, batch: int, d: int, k: int, dtype: torch.dtype,
                device: torch.device) -> list[torch.Tensor]:
        """The seeded initial (W (B, m, d), b (B, m), c (B, m), c_0 (B,)), torch's Linear
        initialisation: uniform in +-1/sqrt(fan-in)."""
        generator = make_generator(self.seed, "relu-network-fit", k)

        def uniform(shape: tuple[int, ...], fan_in: int) -> torch.Tensor:
            bound = 1.0 / math.sqrt(fan_in)
            draw = torch.rand(shape, generator=generator, dtype=torch.float64)
            return ((2 * draw - 1) * bound).to(dtype=dtype, device=device)

        m = self.width
        return [uniform((batch, m, d), d), uniform((batch, m), d), uniform((batch, m), m),
                uniform((batch,), m)]

    @staticmethod
    def network(params: list[torch.Tensor], inputs: torch.Tensor) -> torch.Tensor:
        """inputs: (B, k, d) -> c^T relu(W x + b) + c_0: (B, k)."""
        W, b, c, c0 = params
        hidden = torch.relu(inputs @ W.transpose(1, 2) + b[:, None, :])    # (B, k, m)
        return (hidden @ c[..., None]).squeeze(-1) + c0[:, None]

    def fit(self, X: torch.Tensor, y: torch.Tensor) -> tuple[list[torch.Tensor], list[float]]:
        """X: (B, k, d), y: (B, k), k >= 1 -> the fitted parameters and the training loss
        (the prompts' mean squared errors summed) before each step and after the last."""
        with torch.inference_mode(False), torch.enable_grad():
            inputs, targets = X.detach().clone(), y.detach().clone()
            params = [p.requires_grad_() for p in
                      self.initial(X.shape[0], X.shape[2], X.shape[1], X.dtype, X.device)]
            optimiser = torch.optim.Adam(params, lr=self.lr)
            losses: list[float] = []
            for _ in range(self.steps):
                optimiser.zero_grad()
                loss = (self.network(params, inputs) - targets).square().mean(1).sum()
                losses.append(float(loss.detach()))
                loss.backward()  # type: ignore[no-untyped-call]
                optimiser.step()
            final = (self.network(params, inputs) - targets).square().mean(1).sum()
            losses.append(float(final.detach()))
            return [p.detach() for p in params], losses

    def predict(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """X: (B, k, d), y: (B, k), x_q: (B, d) -> yhat: (B,) (0 when k = 0)."""
        if X.shape[1] == 0:
            return x_q.new_zeros(x_q.shape[0])
        params, _ = self.fit(X, y)
        return self.network(params, x_q[:, None, :]).squeeze(1).to(x_q.dtype)


def lasso_baseline(task: object, seed: int) -> InContextPredictor:
    """The sparse-linear family's own baseline (``baselines``): Lasso on each prompt."""
    return LassoPredictor()


def boosted_trees_baseline(task: object, seed: int) -> InContextPredictor:
    """The decision-tree family's own baseline: gradient-boosted trees on each prompt."""
    return BoostedTreesPredictor(seed)


def relu_network_baseline(task: object, seed: int) -> InContextPredictor:
    """The relu-network family's own baseline: a two-layer ReLU network fitted by Adam."""
    return ReluNetworkFit(seed)
