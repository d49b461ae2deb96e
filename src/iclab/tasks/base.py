"""The task-distribution interface shared by every family."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch


@dataclass(frozen=True)
class Prompts:
    """A batch of prompts.

    X: (B, n, d) in-context inputs; y: (B, n) their labels;
    x_q: (B, d) queries; y_q: (B,) the queries' labels.
    """

    X: torch.Tensor
    y: torch.Tensor
    x_q: torch.Tensor
    y_q: torch.Tensor

    @property
    def batch(self) -> int:
        return int(self.X.shape[0])

    @property
    def n(self) -> int:
        return int(self.X.shape[1])

    @property
    def d(self) -> int:
        return int(self.X.shape[2])

    def to(self, dtype: torch.dtype) -> Prompts:
        """The same prompts in another floating-point type."""
        return Prompts(self.X.to(dtype), self.y.to(dtype), self.x_q.to(dtype), self.y_q.to(dtype))


class TaskFamily(Protocol):
    """A distribution over regression tasks and the prompts drawn from them.

    ``sample_prompts`` must draw only from ``generator``, so a batch is reproducible from the
    generator's seed alone.
    """

    d: int
    n: int
    sigma: float

    def sample_prompts(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
    ) -> Prompts:
        """Draw ``batch`` prompts: X (B, n, d), y (B, n), x_q (B, d), y_q (B,)."""
        ...
