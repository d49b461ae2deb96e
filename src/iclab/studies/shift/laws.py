"""Gaussian test laws that differ from the training law: distribution shift at test time.

A ``GaussianTestLaw`` is a linear Gaussian law whose parts may all differ from the training
law (the theory docs (docs/theory.md), section 8):

    x_i ~ N(0, cov_x)  (the n context covariates),   x_q ~ N(0, cov_q)  (the query),
    w ~ N(w_mean, cov_w),   y = w^T x + sigma eps,   eps ~ N(0, 1).

``shifted_law(base, kind, value)`` applies one shift of a given size to a training law
``LinearGaussian`` (Sigma_x, Sigma_w, sigma, n):

| kind          | test law                                                          | value       |
| ------------- | ----------------------------------------------------------------- | ----------- |
| ``n``         | n' = value context examples                                       | 1 .. 1e6    |
| ``sigma``     | noise sigma' = value                                              | 0 .. 1e4    |
| ``x-scale``   | x_i, x_q ~ N(0, c^2 Sigma_x), c = value (the covariate shift)     | 1e-4 .. 1e4 |
| ``query-scale`` | only x_q ~ N(0, c^2 Sigma_x)                                    | 1e-4 .. 1e4 |
| ``w-scale``   | w ~ N(0, c^2 Sigma_w)                                             | 1e-4 .. 1e4 |
| ``w-mean``    | w ~ N(m 1 / sqrt(d), Sigma_w), m = value (a task law off centre)  | -1e4 .. 1e4 |
| ``skewed-covariance`` | x_i, x_q ~ N(0, L S L^T), L L^T = Sigma_x, S with eigenvalues | 0 .. 4 |
|               | proportional to i^(-value), trace d (Garg et al.: 2)              |             |

Value 1 of a scale (0 of ``w-mean`` and ``skewed-covariance``, the training n or sigma) gives
back the training law. Garg et al.'s shifts of the inputs that leave the Gaussian laws
(``orthant``, ``orthant-random``, ``orthogonal-query``, values 0 .. 1, 0 the training law) are
``input_shifted_law``'s (``iclab.studies.garg.input_shifts``), measured by Monte Carlo only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from iclab.studies.garg.input_shifts import INPUT_SHIFT_KINDS, InputShiftLaw, skewed_covariance
from iclab.tasks.base import Prompts, TaskFamily, check_scalars
from iclab.tasks.covariance import validate_covariance
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.errors import ConfigError

SHIFT_KINDS = ("n", "sigma", "x-scale", "query-scale", "w-scale", "w-mean", "skewed-covariance")
"""The shifts to Gaussian test laws (exact losses)."""
ALL_SHIFT_KINDS = (*SHIFT_KINDS, *INPUT_SHIFT_KINDS)
"""With Garg et al.'s shifts of the inputs (Monte Carlo only), as ``iclab shift`` takes them."""
SCALE_KINDS = ("x-scale", "query-scale", "w-scale")
MAX_SKEW = 4.0
TRAINING_VALUE = {**{kind: 1.0 for kind in SCALE_KINDS}, "w-mean": 0.0,
                  **{kind: 0.0 for kind in ("skewed-covariance", *INPUT_SHIFT_KINDS)}}
"""The value of a shift that gives back the training law, where it does not depend on the law
(n and sigma: the training law's own)."""
InputMove = Callable[[torch.Tensor, torch.Tensor, torch.Generator],
                     tuple[torch.Tensor, torch.Tensor]]
"""(X: (B, n, d), x_q: (B, d), generator) -> the moved inputs: an input shift's move."""
MAX_N = 1_000_000
"""The largest shifted n: the largest n a run may train on (``TaskConfig.n``)."""
MAX_SHIFT = 1e4
"""The largest sigma, |w-mean| and scale (and 1 / MAX_SHIFT the smallest scale): the largest
noise a run may train on. Within these a shifted prompt's fourth powers (the test loss's
standard error squares squared errors of predictions cubic in a scale) stay finite in float64
and its values in float32; beyond them a loss overflows to infinity or NaN."""
_ALLOWED = {
    "n": f"an integer from 1 to {MAX_N}",
    "sigma": f"a number from 0 to {MAX_SHIFT:g}",
    "x-scale": f"a number from {1 / MAX_SHIFT:g} to {MAX_SHIFT:g}",
    "query-scale": f"a number from {1 / MAX_SHIFT:g} to {MAX_SHIFT:g}",
    "w-scale": f"a number from {1 / MAX_SHIFT:g} to {MAX_SHIFT:g}",
    "w-mean": f"a number from {-MAX_SHIFT:g} to {MAX_SHIFT:g}",
    "skewed-covariance": f"an exponent from 0 to {MAX_SKEW:g}",
    **{kind: "a number from 0 to 1" for kind in INPUT_SHIFT_KINDS},
}


@dataclass(frozen=True, eq=False)
class GaussianTestLaw(TaskFamily):
    """A linear Gaussian test law with separate context, query and task laws.

    d >= 1, n >= 1, sigma >= 0; cov_x (context covariates), cov_q (query), cov_w (task): (d, d)
    positive definite; w_mean: (d,) finite. Stored as float64 numpy arrays.
    """

    d: int
    n: int
    sigma: float
    cov_x: np.ndarray
    cov_q: np.ndarray
    cov_w: np.ndarray
    w_mean: np.ndarray
    name = "gaussian test law"

    def __post_init__(self) -> None:
        check_scalars(self.d, self.n, self.sigma)
        object.__setattr__(self, "sigma", float(self.sigma))
        for name in ("cov_x", "cov_q", "cov_w"):
            object.__setattr__(self, name, validate_covariance(getattr(self, name), self.d, name))
        mean = np.asarray(self.w_mean)
        if mean.dtype.kind not in "biuf" or mean.shape != (self.d,):
            raise ConfigError(f"w_mean must be a real vector of shape ({self.d},), "
                              f"got shape {mean.shape} and dtype {mean.dtype}")
        if not np.all(np.isfinite(mean)):
            raise ConfigError("w_mean must have finite entries")
        object.__setattr__(self, "w_mean", mean.astype(np.float64))

    @classmethod
    def from_task(cls, task: LinearGaussian) -> GaussianTestLaw:
        """The training law of ``task`` itself (query law = context law, w centred)."""
        return cls(task.d, task.n, float(task.sigma), task.sigma_x, task.sigma_x, task.sigma_w,
                   np.zeros(task.d))

    def sample_prompts(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32,
        move: InputMove | None = None,
    ) -> Prompts:
        """Draw whole prompts: X (B, n, d), y (B, n), x_q (B, d), y_q (B,).

        The standard normals are drawn in the same order and shapes as
        ``LinearGaussian.sample_prompts``, so the training law drawn from the same generator
        gives the same prompts up to rounding. ``move`` (Garg et al.'s input shifts,
        ``iclab.studies.garg.input_shifts``) moves the drawn inputs before they are labelled.
        """
        device = generator.device
        d, n = self.d, self.n
        raw = torch.randn(batch, n + 1, d + 1, generator=generator, dtype=dtype, device=device)
        z_w = torch.randn(batch, d, generator=generator, dtype=dtype, device=device)

        def factor(cov: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(np.linalg.cholesky(cov), dtype=dtype, device=device)

        X = raw[:, :n, :d] @ factor(self.cov_x).T                       # (B, n, d)
        x_q = raw[:, n, :d] @ factor(self.cov_q).T                      # (B, d)
        mean = torch.as_tensor(self.w_mean, dtype=dtype, device=device)
        w = z_w @ factor(self.cov_w).T + mean                           # (B, d)
        if move is not None:
            X, x_q = move(X, x_q, generator)
        noise = raw[..., d]                                             # (B, n+1)
        y = torch.einsum("bnd,bd->bn", X, w) + self.sigma * noise[:, :n]
        y_q = (x_q * w).sum(-1) + self.sigma * noise[:, n]
        return Prompts(X=X.contiguous(), y=y.contiguous(), x_q=x_q.contiguous(),
                       y_q=y_q.contiguous())


def check_kind(kind: str, kinds: tuple[str, ...] = SHIFT_KINDS) -> str:
    """Return ``kind`` if it is one of ``kinds``; otherwise raise ConfigError naming them."""
    if not isinstance(kind, str) or kind not in kinds:
        raise ConfigError(f"unknown shift kind {kind!r}; allowed: {', '.join(kinds)}")
    return kind


def check_includes_training_value(kind: str, values: Sequence[float]) -> None:
    """ConfigError unless ``values`` of ``kind`` hold the value that gives back the training
    law, where that value does not depend on the law (``TRAINING_VALUE``)."""
    fixed = TRAINING_VALUE.get(kind)
    if fixed is not None and fixed not in [float(v) for v in values]:
        raise ConfigError(f"values must include the training value {fixed:g} of shift {kind}, "
                          f"got {list(values)!r}")


def check_value(kind: str, value: float, kinds: tuple[str, ...] = SHIFT_KINDS) -> float | int:
    """The value as the kind uses it (an int for ``n``); ConfigError if it is not allowed."""
    check_kind(kind, kinds)
    bad = ConfigError(f"shift {kind}: value {value!r} is not allowed; it must be "
                      f"{_ALLOWED[kind]}")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise bad
    if kind == "n":
        if not float(value).is_integer() or not 1 <= value <= MAX_N:
            raise bad
        return int(value)
    if (kind == "sigma" and not 0 <= value <= MAX_SHIFT) \
            or (kind in SCALE_KINDS and not 1 / MAX_SHIFT <= value <= MAX_SHIFT) \
            or (kind == "w-mean" and not abs(value) <= MAX_SHIFT) \
            or (kind == "skewed-covariance" and not 0 <= value <= MAX_SKEW) \
            or (kind in INPUT_SHIFT_KINDS and not 0 <= value <= 1):
        raise bad
    return float(value)


def parse_values(kind: str, text: str, kinds: tuple[str, ...] = SHIFT_KINDS) -> list[float]:
    """Parse a comma-separated list of values for ``kind`` ("0.5,1,2"); each one checked.

    Raises ConfigError (one line naming the bad entry) on an empty list, a non-number, a value
    the kind does not allow, or a repeated value.
    """
    check_kind(kind, kinds)
    parts = [part.strip() for part in str(text).split(",")]
    if not parts or any(part == "" for part in parts):
        raise ConfigError(f"--values must be a comma-separated list of numbers, got {text!r}")
    values: list[float] = []
    for part in parts:
        try:
            number = float(part)
        except ValueError:
            raise ConfigError(f"--values: {part!r} is not a number; shift {kind} takes "
                              f"{_ALLOWED[kind]}") from None
        values.append(float(check_value(kind, number, kinds)))
    if len(set(values)) != len(values):
        raise ConfigError(f"--values: {text!r} repeats a value")
    return values


def shifted_law(base: LinearGaussian, kind: str, value: float) -> GaussianTestLaw:
    """The training law of ``base`` with one shift of size ``value`` (table in the docstring)."""
    checked = check_value(kind, value)
    law = GaussianTestLaw.from_task(base)
    d, n, sigma = law.d, law.n, law.sigma
    cov_x, cov_q, cov_w, mean = law.cov_x, law.cov_q, law.cov_w, law.w_mean
    square = float(checked) * float(checked)     # inf, not OverflowError, past float64
    if kind == "n":
        n = int(checked)
    elif kind == "sigma":
        sigma = float(checked)
    elif kind == "x-scale":
        cov_x, cov_q = square * cov_x, square * cov_q
    elif kind == "query-scale":
        cov_q = square * cov_q
    elif kind == "w-scale":
        cov_w = square * cov_w
    elif kind == "skewed-covariance" and float(checked) != 0.0:   # 0: the training law
        root = np.linalg.cholesky(cov_x)
        cov_x = cov_q = root @ skewed_covariance(d, float(checked)) @ root.T
    else:  # w-mean
        mean = np.full(d, float(checked) / math.sqrt(d))
    try:
        return GaussianTestLaw(d, n, sigma, cov_x, cov_q, cov_w, mean)
    except ConfigError:  # a scale so extreme that c^2 Sigma under- or overflows float64
        raise ConfigError(f"shift {kind}: value {value!r} is too extreme: the shifted "
                          f"covariance is not finite and positive definite in float64") from None


def input_shifted_law(base: LinearGaussian, kind: str, value: float) -> InputShiftLaw:
    """The training law of ``base`` with Garg et al.'s shift ``kind`` of its inputs at
    ``value`` (``iclab.studies.garg.input_shifts``): Monte Carlo only."""
    checked = check_value(kind, value, INPUT_SHIFT_KINDS)
    return InputShiftLaw(GaussianTestLaw.from_task(base), kind, float(checked))
