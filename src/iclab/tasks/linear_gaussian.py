"""Linear Gaussian tasks: x ~ N(0, Sigma_x), f(x) = w^T x with w ~ N(0, Sigma_w), noise sigma.

Two samplers draw from the same law (docs/theory.md sections 1 and 9):

- ``sample_prompts`` draws whole prompts (X, y, x_q, y_q). Needed wherever real prompts are:
  prediction-level metrics, nuisance shares, the test loss, nonlinear comparisons.
- ``sample_statistics`` draws only what one-layer linear self-attention's prediction depends on.
  The prompt enters yhat = u^T Z M x_q only through Z = sum_i e_i e_i^T, and given w,
  Z = L W L^T with L = [[L_x, 0], [w^T L_x, sigma]] and W ~ Wishart(n, I_{d+1}) independent of
  w, x_q and the query noise. For fixed p = L^T u and q = L^T M x_q only the 2x2 block of W on
  span(p, q) matters; its Bartlett factor [[c1, 0], [z, c2]] gives
  p^T W q = (p.q) c1^2 + c1 z sqrt(|p|^2 |q|^2 - (p.q)^2), with c1^2 ~ chi2_n and z ~ N(0, 1).
  So a prompt costs 2d + 3 random numbers whatever n is (see ``iclab.models.lsa.layer``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from iclab.tasks.base import TaskFamily, check_scalars
from iclab.tasks.covariance import covariance_or_identity, validate_covariance
from iclab.tasks.wishart import sample_z_statistics
from iclab.utils.batches import GaussianStatistics, Prompts, ZStatistics


def _cholesky_or_none(cov: np.ndarray | None) -> np.ndarray | None:
    return None if cov is None else np.linalg.cholesky(cov)


@dataclass(frozen=True)
class LinearGaussian(TaskFamily):
    """The linear Gaussian task family of docs/theory.md section 1.

    d >= 1 input dimension, n >= 1 examples per prompt, sigma >= 0 label noise, cov_x and cov_w
    (d, d) positive-definite covariances (None means the identity); name: the registry name it
    was made under. Capabilities: the sufficient-statistic sampler, the Gaussian theory, and
    sign symmetry (w -> -w); rotation-invariant when Sigma_x = I and Sigma_w = c I.
    """

    d: int
    n: int
    sigma: float
    cov_x: np.ndarray | None = None
    cov_w: np.ndarray | None = None
    name: str = "linear-gaussian"
    statistics = True
    statistics_kinds = ("bartlett", "wishart")
    gaussian = True
    sign_symmetric = True
    _chol_x: np.ndarray | None = field(init=False, repr=False, compare=False)
    _chol_w: np.ndarray | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_scalars(self.d, self.n, self.sigma)
        cov_x = None if self.cov_x is None else validate_covariance(self.cov_x, self.d, "cov_x")
        cov_w = None if self.cov_w is None else validate_covariance(self.cov_w, self.d, "cov_w")
        object.__setattr__(self, "cov_x", cov_x)
        object.__setattr__(self, "cov_w", cov_w)
        object.__setattr__(self, "_chol_x", _cholesky_or_none(cov_x))
        object.__setattr__(self, "_chol_w", _cholesky_or_none(cov_w))

    @property
    def rotation_invariant(self) -> bool:
        """x ~ N(0, I) and w ~ N(0, c I): the law of f is invariant under rotations."""
        sigma_w = self.sigma_w
        return self.cov_x_is_identity and bool(
            np.allclose(sigma_w, sigma_w[0, 0] * np.eye(self.d), rtol=0, atol=0))

    @property
    def cov_x_is_identity(self) -> bool:
        return self.cov_x is None or bool(np.array_equal(self.cov_x, np.eye(self.d)))

    @property
    def sigma_x(self) -> np.ndarray:
        """Sigma_x as a float64 (d, d) array."""
        return covariance_or_identity(self.cov_x, self.d)

    @property
    def sigma_w(self) -> np.ndarray:
        """Sigma_w as a float64 (d, d) array."""
        return covariance_or_identity(self.cov_w, self.d)

    @staticmethod
    def _factor(
        chol: np.ndarray | None, dtype: torch.dtype, device: torch.device
    ) -> torch.Tensor | None:
        return None if chol is None else torch.as_tensor(chol, dtype=dtype, device=device)

    def sample_prompts(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
    ) -> Prompts:
        """Draw whole prompts: X (B, n, d), y (B, n), x_q (B, d), y_q (B,)."""
        device = generator.device
        raw = torch.randn(batch, self.n + 1, self.d + 1, generator=generator, dtype=dtype,
                          device=device)
        w = torch.randn(batch, self.d, generator=generator, dtype=dtype, device=device)
        inputs, noise = raw[..., : self.d], raw[..., self.d]   # (B, n+1, d), (B, n+1)
        chol_x = self._factor(self._chol_x, dtype, device)
        chol_w = self._factor(self._chol_w, dtype, device)
        if chol_x is not None:
            inputs = inputs @ chol_x.T
        if chol_w is not None:
            w = w @ chol_w.T
        labels = torch.einsum("bkd,bd->bk", inputs, w) + self.sigma * noise  # (B, n+1)
        return Prompts(
            X=inputs[:, : self.n].contiguous(),
            y=labels[:, : self.n].contiguous(),
            x_q=inputs[:, self.n].contiguous(),
            y_q=labels[:, self.n].contiguous(),
        )

    def sample_statistics(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
    ) -> GaussianStatistics:
        """Draw the sufficient statistics of ``batch`` prompts: 2d + 3 numbers each, any n.

        w and x_q are (B, d) views of (d, B) tensors: the prediction reduces over d.
        """
        device = generator.device
        d = self.d
        normals = torch.randn(2 * d + 2, batch, generator=generator, dtype=dtype, device=device)
        w_t, x_t = normals[:d], normals[d : 2 * d]                     # (d, B) each
        chol_x = self._factor(self._chol_x, dtype, device)
        chol_w = self._factor(self._chol_w, dtype, device)
        if chol_x is not None:
            x_t = chol_x @ x_t
        if chol_w is not None:
            w_t = chol_w @ w_t
        y_q = (w_t * x_t).sum(0).add_(normals[2 * d], alpha=self.sigma)
        shape = torch.full((batch,), self.n / 2, dtype=dtype, device=device)
        chi2 = torch._standard_gamma(shape, generator=generator).mul_(2)
        return GaussianStatistics(
            w=w_t.T, x_q=x_t.T, y_q=y_q, chi2=chi2, z=normals[2 * d + 1], chol_x=chol_x,
            sigma=float(self.sigma), n=self.n,
        )

    def sample_z_statistics(
        self, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
    ) -> ZStatistics:
        """Draw the statistics (Z, x_q, y_q) any depth of LSA reads: (d+1)(d+2)/2 + 2d + 1
        numbers per prompt whatever n is (``iclab.tasks.wishart``)."""
        return sample_z_statistics(self, batch, generator, dtype)
