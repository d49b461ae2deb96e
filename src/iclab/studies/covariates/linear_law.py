"""Linear tasks with any covariate law and, for Gaussian covariates, correlated contexts.

f(x) = w^T x with w ~ N(0, Sigma_w), labels y = f(x) + sigma eps with eps ~ N(0, 1), and

- independent positions (the default): every x (the n examples' and the query's) is
  x = Sigma_x^(1/2) z with the symmetric square root and z's coordinates drawn iid from
  ``law`` (``iclab.studies.covariates.laws``), so E[x x^T] = Sigma_x whatever the law. With the
  Gaussian law this is the law of ``iclab.tasks.linear_gaussian.LinearGaussian``.
- ``rho``: AR(1) across the positions 1..n+1 of a prompt (the query is position n+1):
  x_1 = Sigma_x^(1/2) z_1, x_(i+1) = rho x_i + sqrt(1 - rho^2) Sigma_x^(1/2) z_(i+1), so
  every x ~ N(0, Sigma_x) (stationary) and Cov(x_i, x_j) = rho^|i-j| Sigma_x.
- ``position_cov`` R, (n+1, n+1) symmetric positive definite, the query last:
  [x_1 .. x_(n+1)]^T = R^(1/2) Z Sigma_x^(1/2) (symmetric roots), Z (n+1, d) iid N(0, 1),
  i.e. vec x = (R^(1/2) kron Sigma_x^(1/2)) vec z and Cov(x_i, x_j) = R_ij Sigma_x.

Correlated contexts need the Gaussian law (their optimum is the closed form of
``iclab.studies.covariates.correlated``); anything else is refused.

It is a part of the ``linear-gaussian`` family, not a family of its own: ``linear_family``
builds today's ``LinearGaussian`` for Gaussian, independent covariates and a
``LinearLawTask`` otherwise. Its declared capabilities (``iclab.tasks.base.TaskFamily``): no
sufficient-statistic sampler and no Gaussian theory (whole prompts, its own optimum), sign
symmetry (w -> -w), rotation invariance for Gaussian covariates with Sigma_x = I and
Sigma_w = c I, and ``covariate_law``, which the theory asks for
(``iclab.studies.covariates.optimum``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from iclab.studies.covariates.laws import DEFAULT_LAW, CovariateLaw, GaussianLaw, parse_law
from iclab.studies.covariates.optimum import covariate_optimum
from iclab.tasks.base import Prompts, TaskFamily, check_scalars
from iclab.tasks.covariance import covariance_or_identity, symmetric_sqrt, validate_covariance
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.optimum import FamilyOptimum
from iclab.utils.errors import ConfigError


def ar1_position_covariance(n: int, rho: float) -> np.ndarray:
    """R_ij = rho^|i - j| over the n + 1 positions of a prompt: (n+1, n+1) float64."""
    index = np.arange(n + 1)
    return np.asarray(float(rho) ** np.abs(index[:, None] - index[None, :]), dtype=np.float64)


def _check_rho(rho: float) -> float:
    if isinstance(rho, bool) or not isinstance(rho, int | float) or not math.isfinite(rho) \
            or not -1 < rho < 1:
        raise ConfigError(f"context correlation rho must be a number in (-1, 1), got {rho!r}")
    return float(rho)


@dataclass(frozen=True)
class LinearLawTask(TaskFamily):
    """The linear family with covariate law ``law`` and optional context correlation.

    d >= 1, n >= 1, sigma >= 0; cov_x, cov_w (d, d) positive definite (None: identity);
    law: a ``CovariateLaw`` (default Gaussian); rho in (-1, 1) or position_cov (n+1, n+1)
    positive definite (not both; Gaussian law only). See the module docstring.
    """

    d: int
    n: int
    sigma: float
    cov_x: np.ndarray | None = None
    cov_w: np.ndarray | None = None
    law: CovariateLaw = field(default_factory=GaussianLaw)
    rho: float | None = None
    position_cov: np.ndarray | None = None
    _root_x: np.ndarray | None = field(init=False, repr=False, compare=False)
    _chol_w: np.ndarray | None = field(init=False, repr=False, compare=False)
    _mix: np.ndarray | None = field(init=False, repr=False, compare=False)
    name = "linear-gaussian"
    statistics = False
    gaussian = False
    sign_symmetric = True

    def __post_init__(self) -> None:
        check_scalars(self.d, self.n, self.sigma)
        cov_x = None if self.cov_x is None else validate_covariance(self.cov_x, self.d, "cov_x")
        cov_w = None if self.cov_w is None else validate_covariance(self.cov_w, self.d, "cov_w")
        object.__setattr__(self, "cov_x", cov_x)
        object.__setattr__(self, "cov_w", cov_w)
        object.__setattr__(self, "_root_x", None if cov_x is None else symmetric_sqrt(cov_x))
        object.__setattr__(self, "_chol_w", None if cov_w is None else np.linalg.cholesky(cov_w))
        correlated = self.rho is not None or self.position_cov is not None
        if self.rho is not None and self.position_cov is not None:
            raise ConfigError("give either a context correlation rho or a position covariance, "
                              "not both")
        if correlated and not isinstance(self.law, GaussianLaw):
            raise ConfigError(
                f"correlated contexts need the gaussian covariate law, got {self.law.spec!r}"
            )
        # C (n+1, n+1) with [x_1 .. x_(n+1)] = C [z_1 .. z_(n+1)] position by position: the
        # symmetric root of R, or for AR(1) the lower Cholesky factor of rho^|i-j| (the
        # recursion x_(i+1) = rho x_i + sqrt(1 - rho^2) z_(i+1) written as one product).
        mix = None
        if self.rho is not None:
            object.__setattr__(self, "rho", _check_rho(self.rho))
            mix = np.linalg.cholesky(ar1_position_covariance(self.n, self.rho))
        if self.position_cov is not None:
            R = validate_covariance(self.position_cov, self.n + 1, "position covariance")
            object.__setattr__(self, "position_cov", R)
            mix = symmetric_sqrt(R)
        object.__setattr__(self, "_mix", mix)

    @property
    def sigma_x(self) -> np.ndarray:
        """Sigma_x as a float64 (d, d) array."""
        return covariance_or_identity(self.cov_x, self.d)

    @property
    def sigma_w(self) -> np.ndarray:
        """Sigma_w as a float64 (d, d) array."""
        return covariance_or_identity(self.cov_w, self.d)

    @property
    def covariate_law(self) -> CovariateLaw:
        """The law of the covariates' standardised coordinates (the theory asks for it)."""
        return self.law

    def own_optimum(self, monte_carlo: bool = False, seed: int = 0) -> FamilyOptimum:
        """This family's optimal one-layer LSA, which the theory asks of it (a covariate law's
        or correlated contexts', docs/theory.md sections 11 and 12)."""
        return covariate_optimum(self, monte_carlo=monte_carlo, seed=seed).as_family_optimum()

    @property
    def rotation_invariant(self) -> bool:
        """Gaussian covariates (correlated or not) with Sigma_x = I and Sigma_w = c I: the law
        of a prompt is invariant under one rotation of every input and of w."""
        sigma_w = self.sigma_w
        return (isinstance(self.law, GaussianLaw)
                and bool(np.array_equal(self.sigma_x, np.eye(self.d)))
                and bool(np.array_equal(sigma_w, sigma_w[0, 0] * np.eye(self.d))))

    @property
    def correlated(self) -> bool:
        """Whether the positions of a prompt are correlated (rho or a position covariance)."""
        return self.rho is not None or self.position_cov is not None

    @property
    def position_covariance(self) -> np.ndarray:
        """R: (n+1, n+1), Cov(x_i, x_j) = R_ij Sigma_x (the identity for independent ones)."""
        if self.position_cov is not None:
            return self.position_cov
        if self.rho is not None:
            return ar1_position_covariance(self.n, self.rho)
        return np.eye(self.n + 1)

    def _inputs_batch_inner(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype
    ) -> torch.Tensor:
        """All n + 1 inputs of ``batch`` prompts, the query last: (d, n+1, B), batch axis
        innermost. A law that declares ``iid`` coordinates is drawn in this layout directly;
        any other law along its last axis, then transposed."""
        d, positions = self.d, self.n + 1
        if getattr(self.law, "iid", False):
            z = self.law.sample_standard((d, positions, batch), generator, dtype)
        else:
            drawn = self.law.sample_standard((batch, positions, d), generator, dtype)
            z = drawn.permute(2, 1, 0).contiguous()
        if self._mix is not None:
            mixing = torch.as_tensor(self._mix, dtype=dtype, device=z.device)
            z = torch.matmul(mixing, z)                               # (d, n+1, B)
        if self._root_x is None:
            return z
        root = torch.as_tensor(self._root_x, dtype=dtype, device=z.device)
        return (root @ z.reshape(d, -1)).view(d, positions, batch)

    def sample_inputs(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
    ) -> torch.Tensor:
        """All n + 1 inputs of ``batch`` prompts, the query last: (B, n+1, d) (a view of a
        batch-innermost tensor)."""
        return self._inputs_batch_inner(batch, generator, dtype).permute(2, 1, 0)

    def sample_prompts(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
    ) -> Prompts:
        """Draw whole prompts: X (B, n, d), y (B, n), x_q (B, d), y_q (B,), as views of
        batch-innermost tensors (``Prompts.from_batch_inner``): the inputs, then w, then
        (when sigma > 0) the noise."""
        device = generator.device
        inputs = self._inputs_batch_inner(batch, generator, dtype)        # (d, n+1, B)
        w = torch.randn(self.d, batch, generator=generator, dtype=dtype, device=device)
        if self._chol_w is not None:
            w = torch.as_tensor(self._chol_w, dtype=dtype, device=device) @ w
        labels = (inputs * w[:, None, :]).sum(0)                          # (n+1, B)
        if self.sigma > 0:
            noise = torch.randn(self.n + 1, batch, generator=generator, dtype=dtype,
                                device=device)
            labels.add_(noise, alpha=float(self.sigma))
        return Prompts.from_batch_inner(inputs, labels)


def linear_family(
    d: int, n: int, sigma: float, cov_x: np.ndarray | None = None,
    cov_w: np.ndarray | None = None, x_law: str = DEFAULT_LAW,
    context_correlation: float | None = None, context_covariance: np.ndarray | None = None,
) -> LinearGaussian | LinearLawTask:
    """The ``linear-gaussian`` family with its parameters (None: not given; the covariate law
    ``x_law`` by name, ``DEFAULT_LAW`` "gaussian" unless given).

    With the Gaussian law and no correlation or position covariance it is
    exactly ``LinearGaussian`` (same draws, same sampler, same Bayes risk); otherwise a
    ``LinearLawTask``. Errors name the config keys.
    """
    if x_law == DEFAULT_LAW and context_correlation is None and context_covariance is None:
        return LinearGaussian(d, n, sigma, cov_x, cov_w)
    law = parse_law(x_law)
    if context_correlation is not None:
        rho = context_correlation
        if isinstance(rho, bool) or not isinstance(rho, int | float) \
                or not math.isfinite(rho) or not -1 < rho < 1:
            raise ConfigError(f"context_correlation must be a number in (-1, 1), got {rho!r}")
    correlated = context_correlation is not None or context_covariance is not None
    if context_correlation is not None and context_covariance is not None:
        raise ConfigError("give context_correlation or context_covariance, not both")
    if correlated and not isinstance(law, GaussianLaw):
        raise ConfigError(f"context_correlation and context_covariance need x_law gaussian "
                          f"(correlated contexts are Gaussian), got x_law {law.spec!r}")
    if context_covariance is not None:
        check_scalars(d, n, sigma)
        context_covariance = validate_covariance(context_covariance, n + 1,
                                                 "context_covariance")
    return LinearLawTask(d, n, sigma, cov_x, cov_w, law, context_correlation,
                         context_covariance)
