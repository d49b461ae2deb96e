"""Garg et al.'s curriculum: the effective dimension and prompt length grow during training.

At step t (0-based) the prompts have

    d_t = min(d, d_start + d_increment * floor(t / every)),
    n_t = min(n, n_start + n_increment * floor(t / every)),

x ~ N(0, I) on the first d_t coordinates and exactly 0 on the others, n_t in-context
examples, and f drawn from the family's full law (over all d coordinates) and evaluated on
those inputs, as Garg et al. do (their x's last d - d_t coordinates are zeroed). A family
drawn on inputs (``draw_values``) takes any inputs; a linear Gaussian family (``gaussian``)
draws w ~ N(0, Sigma_w) and x from the leading d_t block of Sigma_x, which is the law of
the full task on zeroed coordinates when Sigma_x is diagonal, and of the truncated task
otherwise (documented in the guide).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from iclab.tasks.base import Prompts, TaskFamily
from iclab.utils.errors import ConfigError


@dataclass(frozen=True)
class Curriculum:
    """The schedule: starts, increments and the steps between increments; ends at (d, n)."""

    d: int
    n: int
    d_start: int
    n_start: int
    every: int
    d_increment: int = 1
    n_increment: int = 2

    def __post_init__(self) -> None:
        for name, value, upper in (("curriculum_d_start", self.d_start, self.d),
                                   ("curriculum_n_start", self.n_start, self.n)):
            if not 1 <= value <= upper:
                raise ConfigError(f"{name} must be from 1 to {upper}, got {value!r}")
        if self.every < 1 or self.d_increment < 0 or self.n_increment < 0:
            raise ConfigError(f"curriculum_every must be >= 1 and the increments >= 0, got "
                              f"{self.every}, {self.d_increment}, {self.n_increment}")

    def at(self, step: int) -> tuple[int, int]:
        """(d_t, n_t), the effective dimension and number of examples at ``step``."""
        rises = step // self.every
        return (min(self.d, self.d_start + self.d_increment * rises),
                min(self.n, self.n_start + self.n_increment * rises))


def make_curriculum(d: int, n: int, every: int | None, d_start: int | None,
                    n_start: int | None, d_increment: int = 1,
                    n_increment: int = 2) -> Curriculum | None:
    """The schedule of the run's options (starts default to d and n), or None when ``every``
    is None (no curriculum: then a start given alone is refused)."""
    if every is None:
        for name, value in (("curriculum_d_start", d_start), ("curriculum_n_start", n_start)):
            if value is not None:
                raise ConfigError(f"{name} needs curriculum_every (the steps between "
                                  f"increments), got {name} {value!r} alone")
        return None
    return Curriculum(d, n, d if d_start is None else d_start, n if n_start is None else
                      n_start, every, d_increment, n_increment)


def supports_curriculum(task: TaskFamily) -> bool:
    """Whether ``task`` can draw curriculum prompts: drawn on inputs, or linear Gaussian."""
    return bool(task.has_draw_values or task.gaussian)


def curriculum_prompts(task: TaskFamily, d_eff: int, n_eff: int, batch: int,
                       generator: torch.Generator,
                       dtype: torch.dtype = torch.float32) -> Prompts:
    """Prompts of ``task`` with x zero beyond coordinate ``d_eff`` and ``n_eff`` examples:
    X (B, n_eff, d), y (B, n_eff), x_q (B, d), y_q (B,)."""
    d, device = task.d, generator.device
    if not (1 <= d_eff <= d and n_eff >= 1):
        raise ConfigError(f"curriculum: effective d {d_eff} and n {n_eff} out of range")
    raw = torch.randn(batch, n_eff + 1, d_eff + 1, generator=generator, dtype=dtype,
                      device=device)
    inputs = torch.zeros(batch, n_eff + 1, d, dtype=dtype, device=device)
    noise = raw[..., d_eff]                                             # (B, n_eff+1)
    if task.has_draw_values:
        inputs[..., :d_eff] = raw[..., :d_eff]
        values = task.draw_values(inputs, generator)
    elif task.gaussian:
        linear: Any = task                      # a gaussian family has sigma_x, sigma_w
        sigma_x = np.asarray(linear.sigma_x)[:d_eff, :d_eff]
        sigma_w = np.asarray(linear.sigma_w)
        root_x = torch.as_tensor(np.linalg.cholesky(sigma_x), dtype=dtype, device=device)
        root_w = torch.as_tensor(np.linalg.cholesky(sigma_w), dtype=dtype, device=device)
        inputs[..., :d_eff] = raw[..., :d_eff] @ root_x.T
        w = torch.randn(batch, d, generator=generator, dtype=dtype, device=device) @ root_w.T
        values = torch.einsum("bkd,bd->bk", inputs, w)
    else:
        raise ConfigError(f"the curriculum needs a family drawn on its inputs or a linear "
                          f"Gaussian one; {task.name!r} is neither")
    labels = values.to(dtype) + float(task.sigma) * noise
    return Prompts(X=inputs[:, :n_eff].contiguous(), y=labels[:, :n_eff].contiguous(),
                   x_q=inputs[:, n_eff].contiguous(), y_q=labels[:, n_eff].contiguous())
