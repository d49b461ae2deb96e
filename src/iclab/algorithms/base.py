"""One predict interface for every in-context regression algorithm, and one fit/predict
interface for the linear ones.

``InContextPredictor`` reads a prompt's examples and predicts the query's label: k-nearest
neighbours, Lasso, trees and fitted networks are predictors. ``InContextAlgorithm`` is a
linear predictor: it returns one weight vector per prompt, and its prediction at the query is
that vector's inner product with x_q.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch


class InContextPredictor(ABC):
    """A learning algorithm run on each prompt's examples, predicting the query's label."""

    name: str = "predictor"
    max_prompts: int | None = None
    """How many prompts are worth giving it in an evaluation that runs it on every prefix
    (None: no limit; the scikit-learn predictors, which fit each prompt alone, set fewer)."""

    @abstractmethod
    def predict(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n), x_q: (B, d) -> yhat: (B,)."""

    def __call__(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        return self.predict(X, y, x_q)


class InContextAlgorithm(InContextPredictor):
    """A linear learning algorithm: one weight vector per prompt."""

    name: str = "algorithm"

    @abstractmethod
    def fit(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n) -> per-prompt weights w_hat: (B, d)."""

    def predict(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n), x_q: (B, d) -> yhat = w_hat . x_q: (B,)."""
        return (self.fit(X, y) * x_q).sum(-1)
