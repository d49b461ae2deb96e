"""Nonlinear task families with x ~ N(0, I), and the anisotropic linear control.

Every family here draws one task function f per prompt and evaluates it on all of the
prompt's inputs (docs/theory.md section 5):

- ``ReluTask``: f(x) = relu(u^T x), u uniform on the unit sphere.
- ``TwoLayerReluTask``: f(x) = a^T relu(W x) / sqrt(m), W_jk ~ N(0, 1/d), a_j ~ N(0, 1),
  width m (default 8).
- ``FunctionTask``: any user function ``draw(inputs, generator) -> values`` that draws one f
  per row of ``inputs`` (B, k, d) and returns its values (B, k) (see ``iclab.tasks.registry``).
- ``anisotropic_task``: the control that is not rotation-invariant, x ~ N(0, I),
  f(x) = w^T x with w ~ N(0, diag(lambda)); it is a ``LinearGaussian`` with Sigma_w =
  diag(lambda), so its optimum has a closed form and the sufficient-statistic sampler applies.
  The default lambda is linearly spaced from 1/4 to 4 (``default_anisotropic_lambda``).

Labels are y = f(x) + sigma * eps with eps ~ N(0, 1). Each family's ``draw_values`` is the one
place its law is written; ``sample_prompts`` wraps it the same way for every family, except
``ReluTask``, whose training sampler draws the same law with the batch axis innermost (the
layout of ``iclab.models.lsa.prompts``, several times faster than drawing, evaluating and
copying batch-major prompts). ``ReluTask`` also draws the statistics Z = sum_i e_i e_i^T that
any depth of LSA reads (``sample_z_statistics``, ``iclab.tasks.relu_statistics``) and the
fewer (X^T y, x_q, y_q) that the one-layer LSA without nuisance terms reads
(``sample_xy_statistics``, ``iclab.tasks.relu_xy_statistics``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from iclab.tasks.base import Prompts, TaskFamily, check_scalars
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.tasks.relu_statistics import sample_relu_z_statistics
from iclab.tasks.relu_xy_statistics import sample_relu_xy_statistics
from iclab.utils.batches import XYStatistics, ZStatistics
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

DrawFunction = Callable[[torch.Tensor, torch.Generator], torch.Tensor]
"""(inputs: (B, k, d), generator) -> f's values (B, k), one freshly drawn f per row."""

DEFAULT_WIDTH = 8
ANISOTROPIC_RANGE = (0.25, 4.0)


def prompts_from_values(
    draw: DrawFunction, n: int, d: int, sigma: float, batch: int, generator: torch.Generator,
    dtype: torch.dtype,
) -> Prompts:
    """Prompts with x ~ N(0, I): inputs and noise first, then f's values from ``draw``."""
    device = generator.device
    raw = torch.randn(batch, n + 1, d + 1, generator=generator, dtype=dtype, device=device)
    inputs, noise = raw[..., :d], raw[..., d]                  # (B, n+1, d), (B, n+1)
    values = draw(inputs, generator)
    if tuple(values.shape) != (batch, n + 1):
        raise ConfigError(
            f"a family's draw returned shape {tuple(values.shape)}, expected {(batch, n + 1)}"
        )
    labels = values.to(dtype) + sigma * noise                  # (B, n+1)
    return Prompts(
        X=inputs[:, :n].contiguous(),
        y=labels[:, :n].contiguous(),
        x_q=inputs[:, n].contiguous(),
        y_q=labels[:, n].contiguous(),
    )


class DrawnTask(TaskFamily):
    """What every family defined by its ``draw_values`` shares: ``sample_prompts``, and the
    capabilities of a family drawn on whole prompts (see ``iclab.tasks.base.TaskFamily``)."""

    d: int
    n: int
    sigma: float
    statistics = False
    gaussian = False
    has_draw_values = True

    def draw_values(self, inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """inputs: (B, k, d) -> the values of one freshly drawn f per row: (B, k)."""
        raise NotImplementedError

    def sample_prompts(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
    ) -> Prompts:
        """Draw whole prompts: X (B, n, d), y (B, n), x_q (B, d), y_q (B,)."""
        return prompts_from_values(self.draw_values, self.n, self.d, float(self.sigma), batch,
                                   generator, dtype)


@dataclass(frozen=True)
class ReluTask(DrawnTask):
    """f(x) = relu(u^T x), u uniform on the sphere S^{d-1}; x ~ N(0, I); noise sigma."""

    d: int
    n: int
    sigma: float

    name = "relu"
    rotation_invariant = True
    sign_symmetric = False  # relu(u.x) >= 0: -f is not in the family
    statistics = True
    statistics_kinds = ("wishart", "xy")

    def gd_moments(self) -> tuple[float, float, float]:
        """g_f = u/2: G = 1/4, A = 1/2, B = (d+2) A (positively homogeneous f)."""
        return 0.25, 0.5, (self.d + 2) / 2

    def __post_init__(self) -> None:
        check_scalars(self.d, self.n, self.sigma)

    def sample_prompts(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
    ) -> Prompts:
        """Draw whole prompts of ``draw_values``'s law, batch axis innermost: the inputs
        (d, n+1, B) and, when sigma > 0, the noise (n+1, B) in one draw, then u (d, B).
        Returns (B, n, d), (B, n), (B, d), (B,) views (``Prompts.from_batch_inner``)."""
        d, n, device = self.d, self.n, generator.device
        noisy = self.sigma > 0
        raw = torch.randn(d + noisy, n + 1, batch, generator=generator, dtype=dtype,
                          device=device)
        u = torch.randn(d, batch, generator=generator, dtype=dtype, device=device)
        u.div_(u.square().sum(0).sqrt_())            # along the outer axis: no strided norm
        inputs = raw[:d]
        labels = (inputs * u[:, None, :]).sum(0).relu_()                 # (n+1, B)
        if noisy:
            labels.add_(raw[d], alpha=float(self.sigma))
        return Prompts.from_batch_inner(inputs, labels)

    def sample_z_statistics(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
    ) -> ZStatistics:
        """Draw the statistics (Z, x_q, y_q) any depth of LSA reads, with the law of whole
        prompts and a cost nearly independent of n (``iclab.tasks.relu_statistics``)."""
        return sample_relu_z_statistics(self.d, self.n, float(self.sigma), batch, generator,
                                        dtype)

    def sample_xy_statistics(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
    ) -> XYStatistics:
        """Draw (X^T y, x_q, y_q), what the nuisance-free one-layer LSA reads, with the law of
        whole prompts (``iclab.tasks.relu_xy_statistics``)."""
        return sample_relu_xy_statistics(self.d, self.n, float(self.sigma), batch, generator,
                                         dtype)

    def draw_values(self, inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """inputs: (B, k, d) -> relu(u^T x) for one u per row: (B, k)."""
        batch = inputs.shape[0]
        u = torch.randn(batch, self.d, generator=generator, dtype=inputs.dtype,
                        device=inputs.device)
        u = u / u.norm(dim=-1, keepdim=True)
        return torch.relu(torch.einsum("bkd,bd->bk", inputs, u))


@dataclass(frozen=True)
class TwoLayerReluTask(DrawnTask):
    """f(x) = a^T relu(W x) / sqrt(m): W (m, d) with entries N(0, 1/d), a (m,) with N(0, 1)."""

    d: int
    n: int
    sigma: float
    width: int = DEFAULT_WIDTH

    name = "two-layer-relu"
    rotation_invariant = True
    sign_symmetric = True  # a -> -a maps f to -f

    def gd_moments(self) -> tuple[float, float, float]:
        """The moments of a single relu, for every width (``iclab.theory.rotation_invariant``)."""
        return 0.25, 0.5, (self.d + 2) / 2

    def __post_init__(self) -> None:
        check_scalars(self.d, self.n, self.sigma)
        if isinstance(self.width, bool) or not isinstance(self.width, int) or self.width < 1:
            raise ConfigError(f"width must be an integer >= 1, got {self.width!r}")

    def draw_weights(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float64
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One network per row: W (B, m, d) and a (B, m)."""
        device = generator.device
        W = torch.randn(batch, self.width, self.d, generator=generator, dtype=dtype,
                        device=device) / math.sqrt(self.d)
        a = torch.randn(batch, self.width, generator=generator, dtype=dtype, device=device)
        return W, a

    def draw_values(self, inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """inputs: (B, k, d) -> a^T relu(W x) / sqrt(m) for one (W, a) per row: (B, k)."""
        W, a = self.draw_weights(inputs.shape[0], generator, inputs.dtype)
        hidden = torch.relu(inputs @ W.transpose(1, 2))        # (B, k, m)
        return (hidden @ a[..., None]).squeeze(-1) / math.sqrt(self.width)


@dataclass(frozen=True)
class FunctionTask(DrawnTask):
    """A user family: x ~ N(0, I), f's values drawn by ``draw`` (one f per row), noise sigma.

    ``rotation_invariant`` is the user's claim that f o R has the law of f for every orthogonal
    R; with it the optimum is one step of plain GD and its step size is estimated by the ratio
    of docs/theory.md section 5.5, without it by least squares over the LSA span.
    """

    d: int
    n: int
    sigma: float
    draw: DrawFunction
    name: str = "custom"
    rotation_invariant: bool = False
    sign_symmetric: bool = False

    def __post_init__(self) -> None:
        check_scalars(self.d, self.n, self.sigma)
        if not callable(self.draw):
            raise ConfigError(f"family {self.name}: draw must be callable, got {self.draw!r}")

    def draw_values(self, inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """inputs: (B, k, d) -> the user's f values (B, k), checked: a real tensor of that
        shape with finite values in ``inputs``' dtype; ConfigError (one line naming the
        family) when the function fails or returns anything else."""
        try:
            values = self.draw(inputs, generator)
        except (Exception, SystemExit) as error:  # the user's code: reported, not raised
            first = (str(error).strip().splitlines() or [""])[0][:160]
            raise ConfigError(f"family {self.name}: draw(inputs, generator) failed "
                              f"({type(error).__name__}: {first})") from None
        if not isinstance(values, torch.Tensor) or tuple(values.shape) != tuple(inputs.shape[:2]):
            shape = tuple(values.shape) if isinstance(values, torch.Tensor) else type(values)
            raise ConfigError(
                f"family {self.name}: draw must return a tensor of shape "
                f"{tuple(inputs.shape[:2])} (batch, inputs), got {shape}"
            )
        if values.is_complex() or values.dtype == torch.bool:
            raise ConfigError(f"family {self.name}: draw must return real numbers, got dtype "
                              f"{values.dtype}")
        values = values.detach().to(inputs.dtype)
        if not bool(torch.isfinite(values).all()):
            raise ConfigError(f"family {self.name}: draw returned non-finite values (or values "
                              f"too large for {inputs.dtype})")
        return values

    def probe(self, seed: int = 0) -> None:
        """Draw two prompts, and f's values on PROBE_ROWS x PROBE_INPUTS inputs in float64,
        so that a broken draw function fails before any work is done: one that raises,
        returns the wrong shape or non-finite values, or a constant f (the same value at
        every input of a row: an in-context regression with nothing to learn)."""
        self.sample_prompts(2, make_generator(seed, "probe"), torch.float32)
        generator = make_generator(seed, "probe-values")
        inputs = torch.randn(PROBE_ROWS, PROBE_INPUTS, self.d, generator=generator,
                             dtype=torch.float64)
        values = self.draw_values(inputs, generator)
        scale = float(values.abs().max())
        spread = float((values - values.mean(dim=1, keepdim=True)).abs().max())
        if not spread > CONSTANT_SPREAD * max(scale, 1e-300):
            raise ConfigError(f"family {self.name}: draw returns a constant f (the same value "
                              f"{float(values[0, 0]):.6g} at every input of a prompt): "
                              f"in-context regression has nothing to learn")


PROBE_ROWS, PROBE_INPUTS = 16, 8
CONSTANT_SPREAD = 1e-12
"""f counts as constant when its values within every probed prompt differ by less than this
relative to their size: float64 rounding of a computation that ignores its input."""


def default_anisotropic_lambda(d: int) -> np.ndarray:
    """The anisotropic control's default variances: linearly spaced from 1/4 to 4, (d,).

    For d = 1 there is one variance, 1/4 (a single coordinate cannot be anisotropic).
    """
    low, high = ANISOTROPIC_RANGE
    return np.linspace(low, high, d) if d > 1 else np.array([low])


def anisotropic_task(
    d: int, n: int, sigma: float, lam: np.ndarray | None = None
) -> LinearGaussian:
    """x ~ N(0, I), w ~ N(0, diag(lam)): a LinearGaussian with Sigma_w = diag(lam)."""
    check_scalars(d, n, sigma)
    variances = default_anisotropic_lambda(d) if lam is None else np.asarray(lam, np.float64)
    if variances.shape != (d,) or not np.all(np.isfinite(variances)) or np.any(variances <= 0):
        raise ConfigError(f"anisotropic lambda must be {d} positive numbers, got {variances}")
    return LinearGaussian(d, n, float(sigma), None, np.diag(variances), name="anisotropic")
