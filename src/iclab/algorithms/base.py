"""One fit/predict interface for every in-context regression algorithm.

An algorithm reads a prompt's examples and returns one weight vector per prompt; its
prediction at the query is that vector's inner product with x_q.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch


class InContextAlgorithm(ABC):
    """A learning algorithm run on each prompt's examples."""

    name: str = "algorithm"

    @abstractmethod
    def fit(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n) -> per-prompt weights w_hat: (B, d)."""

    def predict(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n), x_q: (B, d) -> yhat = w_hat . x_q: (B,)."""
        return (self.fit(X, y) * x_q).sum(-1)

    def __call__(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        return self.predict(X, y, x_q)
