"""Garg et al.'s test-time shifts of the inputs of a linear Gaussian law (section 4 of their
paper; used by ``iclab shift`` through ``iclab.studies.shift.laws``).

- ``skewed_covariance(d, exponent)``: the covariance Q diag(lambda) Q^T with lambda_i
  proportional to i^(-exponent), scaled to trace d, Q a rotation drawn once from a fixed seed
  (Garg et al.'s skewed covariance is exponent 2: their x = z T with T's eigenvalues 1/i);
  Gaussian, so the exact machinery applies.
- ``InputShiftLaw``: the training law with its inputs moved, which is no longer Gaussian, so
  it is measured by Monte Carlo only. With a probability ``value`` per coordinate (1: Garg et
  al.'s shift exactly; 0: the training law):

  ``orthant``: each prompt draws a sign pattern s in {-1, 1}^d; a context coordinate x_ij
  becomes s_j |x_ij| and the query's x_qj becomes -s_j |x_qj| (the opposite orthant);
  ``orthant-random``: the context as in ``orthant``, the query unchanged (a random orthant);
  ``orthogonal-query`` (coordinate-free: ``value`` is the fraction removed): x_q minus
  ``value`` times its projection on the span of the n context inputs, rescaled to the norm of
  x_q (at 1 the query is orthogonal to every context input); needs n < d.

w ~ N(w_mean, cov_w) and the noise are those of the law, so y = w^T x + sigma eps on the moved
inputs, and the posterior mean of w given the context is unchanged (the inputs' law does not
involve w): the Bayes predictor of the training law stays Bayes-optimal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from iclab.tasks.base import Prompts, TaskFamily
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

INPUT_SHIFT_KINDS = ("orthant", "orthant-random", "orthogonal-query")
SKEW_SEED = 0
"""The seed of the skewed covariance's rotation (one fixed rotation per d)."""


def skewed_covariance(d: int, exponent: float) -> np.ndarray:
    """(d, d): Q diag(lambda) Q^T, lambda_i = c i^(-exponent) with sum lambda = d."""
    scales = np.arange(1, d + 1, dtype=np.float64) ** (-float(exponent))
    scales *= d / scales.sum()
    generator = make_generator(SKEW_SEED, "skewed-covariance", d,
                               fixed=True)
    gaussian = torch.randn(d, d, generator=generator, dtype=torch.float64).numpy()
    rotation, triangle = np.linalg.qr(gaussian)
    rotation *= np.sign(np.diag(triangle))                # Haar-distributed
    covariance: np.ndarray = (rotation * scales) @ rotation.T
    symmetric: np.ndarray = (covariance + covariance.T) / 2
    return symmetric


@dataclass(frozen=True, eq=False)
class InputShiftLaw(TaskFamily):
    """A linear Gaussian test law (``base``: d, n, sigma, cov_x, cov_q, cov_w, w_mean, as
    ``iclab.studies.shift.laws.GaussianTestLaw``) with its inputs moved by ``kind`` at ``value``."""

    base: Any
    kind: str
    value: float

    @property
    def name(self) -> str:
        """The shift and its value: "orthant 0.5"."""
        return f"{self.kind} {self.value:g}"

    def __post_init__(self) -> None:
        if self.kind not in INPUT_SHIFT_KINDS:
            raise ConfigError(f"unknown input shift {self.kind!r}; allowed: "
                              f"{', '.join(INPUT_SHIFT_KINDS)}")
        if self.kind == "orthogonal-query" and self.base.n >= self.base.d:
            raise ConfigError(f"shift orthogonal-query needs fewer context examples than "
                              f"dimensions (the query needs room outside their span); the law "
                              f"has n={self.base.n}, d={self.base.d}")

    @property
    def d(self) -> int:
        return int(self.base.d)

    @property
    def n(self) -> int:
        return int(self.base.n)

    @property
    def sigma(self) -> float:
        return float(self.base.sigma)

    @property
    def cov_w(self) -> np.ndarray:
        return np.asarray(self.base.cov_w)

    @property
    def w_mean(self) -> np.ndarray:
        return np.asarray(self.base.w_mean)

    def sample_prompts(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
    ) -> Prompts:
        """Draw whole prompts: X (B, n, d), y (B, n), x_q (B, d), y_q (B,): the base law's,
        with the inputs moved (``move``) before they are labelled."""
        prompts: Prompts = self.base.sample_prompts(batch, generator, dtype, move=self.move)
        return prompts

    def move(self, X: torch.Tensor, x_q: torch.Tensor, generator: torch.Generator
             ) -> tuple[torch.Tensor, torch.Tensor]:
        """X: (B, n, d), x_q: (B, d) -> the moved inputs, same shapes."""
        if self.kind == "orthogonal-query":
            basis, _ = torch.linalg.qr(X.transpose(1, 2))                 # (B, d, n)
            along = (basis @ (basis.transpose(1, 2) @ x_q[..., None])).squeeze(-1)
            moved = x_q - self.value * along
            norm = moved.norm(dim=-1, keepdim=True)
            scale = x_q.norm(dim=-1, keepdim=True) / torch.where(norm > 0, norm, 1.0)
            return X, moved * scale
        batch, n, d = X.shape
        signs = torch.randint(0, 2, (batch, 1, d), generator=generator,
                              device=X.device).to(X.dtype) * 2 - 1
        chosen = torch.rand(batch, n + 1, d, generator=generator, device=X.device,
                            dtype=X.dtype) < self.value
        folded = torch.where(chosen[:, :n], X.abs() * signs, X)
        if self.kind == "orthant-random":
            return folded, x_q
        opposite = torch.where(chosen[:, n], -x_q.abs() * signs[:, 0], x_q)
        return folded, opposite
