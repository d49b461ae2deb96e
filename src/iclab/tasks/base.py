"""The task-distribution interface shared by every family."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import torch

from iclab.errors import ConfigError


def check_scalars(d: int, n: int, sigma: float) -> None:
    """Raise ConfigError naming d, n or sigma when it is not allowed."""
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ConfigError(f"d must be an integer >= 1, got {d!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"n must be an integer >= 1, got {n!r}")
    if isinstance(sigma, bool) or not isinstance(sigma, int | float) or not math.isfinite(sigma) \
            or sigma < 0:
        raise ConfigError(f"sigma must be a finite number >= 0, got {sigma!r}")


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
    generator's seed alone. The attributes are read-only, so frozen dataclasses satisfy it.
    """

    @property
    def d(self) -> int: ...

    @property
    def n(self) -> int: ...

    @property
    def sigma(self) -> float: ...

    def sample_prompts(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
    ) -> Prompts:
        """Draw ``batch`` prompts: X (B, n, d), y (B, n), x_q (B, d), y_q (B,)."""
        ...
