"""Monte Carlo samples for the loss of linear predictors w = M X^T y with M a function of S.

Every L-step GD, plain (M = q(S)) or preconditioned (M built from matrices A_l), predicts
yhat = x_q^T M X^T y with M depending on the prompt only through S = X^T X. Two kinds of
sample give each prompt's loss as a differentiable function of M: (N, d, d):

- ``GaussianSample`` (linear Gaussian families): only S ~ Wishart(n, Sigma_x) is drawn; w,
  the noise and the query are integrated exactly,
      E[loss | S] = tr(Sigma_x E Sigma_w E^T) + sigma^2 tr(Sigma_x M S M^T) + sigma^2,
  E = I - M S, which has far less variance than whole prompts. S is drawn by the Bartlett
  decomposition (n >= d: S = L T T^T L^T with T lower triangular, T_ii^2 ~ chi2_(n-i),
  T_ij ~ N(0, 1) below the diagonal, L the Cholesky factor of Sigma_x), else as X^T X.
- ``PromptSample`` (any family with ``sample_prompts``): whole prompts, reduced to
  (S, v = X^T y, x_q, y_q); the loss is (x_q^T M v - y_q)^2.

For plain GD and the Krylov bound M = q(S) is a polynomial in S, so with S = U diag(lambda) U^T
each prompt's loss depends only on the values p(lambda_i), q(lambda_i) (p = 1 - t q):
``spectral()`` reduces a sample once to a ``SpectralSample`` on which the loss of any
polynomial costs O(d^2) per prompt instead of batched matrix products:

- Gaussian: sum_ij p_i C_ij p_j + sum_i a_i q_i^2 + sigma^2 with C = (U^T Sigma_x U) o
  (U^T Sigma_w U) (elementwise) and a_i = sigma^2 lambda_i (U^T Sigma_x U)_ii;
- prompts: (sum_i q_i g_i - y_q)^2 with g = (U^T v) o (U^T x_q).

Draws come in chunks from seeded streams (``iclab.utils.seeding``), float64, so a sample is a pure
function of (task, count, seed, stream).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from iclab.tasks.base import TaskFamily
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.depth.step_search import derivatives
from iclab.utils.seeding import make_generator

CHUNK = 20_000


class MatrixSample(Protocol):
    """Per-prompt S = X^T X and the loss of predictors x_q^T M X^T y."""

    @property
    def S(self) -> torch.Tensor:
        """(N, d, d)."""
        ...

    def losses(self, M: torch.Tensor) -> torch.Tensor:
        """M: (N, d, d) -> each prompt's (expected) squared error: (N,)."""
        ...

    def spectral(self) -> SpectralSample:
        """The same prompts reduced for polynomial predictors M = q(S)."""
        ...

    def head(self, count: int) -> MatrixSample:
        """The first ``count`` prompts."""
        ...

    def canonical(self) -> tuple[MatrixSample, torch.Tensor]:
        """The sample in coordinates x = T x'' where its loss is cheapest, and T: (d, d).
        Preconditioners map as A'' = T^T A T (predictions are unchanged)."""
        ...


@dataclass(frozen=True)
class SpectralSample:
    """eigenvalues: (N, d) of S. Gaussian: coupling C (N, d, d), noise a (N, d), sigma2;
    prompts: g (N, d), y_q (N,). The unused fields are None."""

    eigenvalues: torch.Tensor
    coupling: torch.Tensor | None = None
    noise: torch.Tensor | None = None
    sigma2: float = 0.0
    g: torch.Tensor | None = None
    y_q: torch.Tensor | None = None

    def head(self, count: int) -> SpectralSample:
        """The first ``count`` prompts."""
        def cut(x: torch.Tensor | None) -> torch.Tensor | None:
            return None if x is None else x[:count]

        return SpectralSample(self.eigenvalues[:count], cut(self.coupling), cut(self.noise),
                              self.sigma2, cut(self.g), cut(self.y_q))

    def losses(self, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """p, q: (N, d), the polynomials' values at the eigenvalues -> losses (N,)."""
        if self.coupling is not None and self.noise is not None:
            signal = torch.einsum("ni,nij,nj->n", p, self.coupling, p)
            return signal + (self.noise * q**2).sum(-1) + self.sigma2
        assert self.g is not None and self.y_q is not None
        return ((q * self.g).sum(-1) - self.y_q) ** 2


@dataclass(frozen=True)
class GaussianSample:
    """S: (N, d, d) Wishart draws; sigma_x, sigma_w: (d, d); sigma2 = sigma^2."""

    S: torch.Tensor
    sigma_x: torch.Tensor
    sigma_w: torch.Tensor
    sigma2: float

    def losses(self, M: torch.Tensor) -> torch.Tensor:
        E = torch.eye(self.S.shape[-1], dtype=M.dtype) - M @ self.S
        signal = ((self.sigma_x @ E @ self.sigma_w) * E).sum((-2, -1))
        noise = ((self.sigma_x @ M @ self.S) * M).sum((-2, -1))
        return signal + self.sigma2 * noise + self.sigma2

    def head(self, count: int) -> GaussianSample:
        return GaussianSample(self.S[:count], self.sigma_x, self.sigma_w, self.sigma2)

    def spectral(self) -> SpectralSample:
        values, U = torch.linalg.eigh(self.S)
        A = U.transpose(-2, -1) @ self.sigma_x @ U
        B = U.transpose(-2, -1) @ self.sigma_w @ U
        noise = self.sigma2 * values * torch.diagonal(A, dim1=-2, dim2=-1)
        return SpectralSample(values, coupling=A * B, noise=noise, sigma2=self.sigma2)

    def canonical(self) -> tuple[MatrixSample, torch.Tensor]:
        """T = L R with Sigma_x = L L^T and L^T Sigma_w L = R diag(D) R^T: there x'' ~ N(0, I),
        w'' = T^T w ~ N(0, diag(D)) and S'' = T^-1 S T^-T."""
        L = torch.linalg.cholesky(self.sigma_x)
        D, R = torch.linalg.eigh(L.T @ self.sigma_w @ L)
        T = L @ R
        inverse = torch.linalg.inv(T)
        return WhiteGaussianSample(inverse @ self.S @ inverse.T, D, self.sigma2), T


@dataclass(frozen=True)
class WhiteGaussianSample:
    """A Gaussian sample with Sigma_x = I and Sigma_w = diag(weights): (d,). The loss is
    sum_ij E_ij^2 weights_j + sigma^2 sum_ij M_ij (M S)_ij + sigma^2, E = I - M S."""

    S: torch.Tensor
    weights: torch.Tensor
    sigma2: float

    def losses(self, M: torch.Tensor) -> torch.Tensor:
        MS = M @ self.S
        E = torch.eye(self.S.shape[-1], dtype=M.dtype) - MS
        return (E**2 * self.weights).sum((-2, -1)) + self.sigma2 * (M * MS).sum((-2, -1)) \
            + self.sigma2

    def head(self, count: int) -> WhiteGaussianSample:
        return WhiteGaussianSample(self.S[:count], self.weights, self.sigma2)

    def canonical(self) -> tuple[MatrixSample, torch.Tensor]:
        return self, torch.eye(self.S.shape[-1], dtype=self.S.dtype)

    def spectral(self) -> SpectralSample:
        d = self.S.shape[-1]
        return GaussianSample(self.S, torch.eye(d, dtype=self.S.dtype), torch.diag(self.weights),
                              self.sigma2).spectral()


@dataclass(frozen=True)
class PromptSample:
    """S: (N, d, d); v = X^T y: (N, d); x_q: (N, d); y_q: (N,)."""

    S: torch.Tensor
    v: torch.Tensor
    x_q: torch.Tensor
    y_q: torch.Tensor

    def losses(self, M: torch.Tensor) -> torch.Tensor:
        prediction = torch.einsum("ni,nij,nj->n", self.x_q, M, self.v)
        return (prediction - self.y_q) ** 2

    def head(self, count: int) -> PromptSample:
        return PromptSample(self.S[:count], self.v[:count], self.x_q[:count], self.y_q[:count])

    def canonical(self) -> tuple[MatrixSample, torch.Tensor]:
        return self, torch.eye(self.S.shape[-1], dtype=self.S.dtype)

    def spectral(self) -> SpectralSample:
        values, U = torch.linalg.eigh(self.S)
        g = torch.einsum("nij,ni->nj", U, self.v) * torch.einsum("nij,ni->nj", U, self.x_q)
        return SpectralSample(values, g=g, y_q=self.y_q)


def wishart(n: int, chol: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
    """count draws of S ~ Wishart(n, chol chol^T): (count, d, d) float64."""
    d = chol.shape[0]
    if n >= d:
        T = torch.randn(count, d, d, generator=generator, dtype=torch.float64).tril(-1)
        shape = torch.tensor([(n - i) / 2 for i in range(d)], dtype=torch.float64)
        chi2 = torch._standard_gamma(shape.expand(count, d).contiguous(), generator=generator) * 2
        T = T + torch.diag_embed(chi2.sqrt())
    else:
        T = torch.randn(count, d, n, generator=generator, dtype=torch.float64)
    factor = chol @ T
    return factor @ factor.transpose(-2, -1)


def draw_sample(task: TaskFamily, count: int, seed: int, stream: str) -> MatrixSample:
    """``count`` prompts of ``task``: a GaussianSample for linear Gaussian families, else a
    PromptSample."""
    sizes = [min(CHUNK, count - start) for start in range(0, count, CHUNK)]
    if isinstance(task, LinearGaussian):
        chol = torch.as_tensor(np.linalg.cholesky(task.sigma_x), dtype=torch.float64)
        S = torch.cat([wishart(task.n, chol, size, make_generator(seed, stream, k))
                       for k, size in enumerate(sizes)])
        return GaussianSample(S, torch.as_tensor(task.sigma_x, dtype=torch.float64),
                              torch.as_tensor(task.sigma_w, dtype=torch.float64),
                              float(task.sigma) ** 2)
    parts = []
    for k, size in enumerate(sizes):
        prompts = task.sample_prompts(size, make_generator(seed, stream, k), torch.float64)
        X = prompts.X
        parts.append((X.transpose(1, 2) @ X, torch.einsum("bnd,bn->bd", X, prompts.y),
                      prompts.x_q, prompts.y_q))
    return PromptSample(*(torch.cat([part[i] for part in parts]) for i in range(4)))


def mean_and_stderr(losses: torch.Tensor) -> tuple[float, float]:
    """The mean of per-prompt losses (N,) and its standard error."""
    count = losses.numel()
    mean = losses.mean()
    # the spread as a plain sum of squares: torch's std() was seen to differ in the last bit
    # between two identical calls in one process (about 1 in 10), sum() and mean() never
    variance = (losses - mean).square().sum() / (count - 1)
    return float(mean), float((variance / count).sqrt())


def eigenvalue_range(sample: SpectralSample) -> tuple[float, float, float]:
    """(1% quantile, 99% quantile, maximum) of the eigenvalues of S over the sample."""
    values = sample.eigenvalues.flatten()
    low, high = torch.quantile(values[:1_000_000],
                               torch.tensor([0.01, 0.99], dtype=torch.float64))
    return max(float(low), 1e-3 * float(high)), float(high), float(values.max())


def chebyshev_values(t: torch.Tensor, degree: int, top: float) -> torch.Tensor:
    """T_j(2 t / top - 1) for j < degree: (degree, *t.shape)."""
    u = 2 * t / top - 1
    values = [torch.ones_like(t), u][:degree]
    while len(values) < degree:
        values.append(2 * u * values[-1] - values[-2])
    return torch.stack(values)


def krylov_losses(sample: SpectralSample, coefficients: torch.Tensor, top: float
                  ) -> torch.Tensor:
    """Per-prompt losses of q = sum_j c_j T_j(2 t / top - 1): (N,)."""
    t = sample.eigenvalues
    q = torch.einsum("j,jnd->nd", coefficients, chebyshev_values(t, coefficients.numel(), top))
    return sample.losses(1 - t * q, q)


def krylov_fit(sample: SpectralSample, layers: int, top: float) -> torch.Tensor:
    """The best q of degree layers - 1 on the sample, as Chebyshev coefficients in
    u = 2 t / top - 1: (layers,). The mean loss is quadratic in them: solved exactly."""
    def mean_loss(c: torch.Tensor) -> torch.Tensor:
        return krylov_losses(sample, c, top).mean()

    _, grad, hessian = derivatives(mean_loss, torch.zeros(layers, dtype=torch.float64))
    # gelsd, not the default gelsy: gelsy's answer for the same 3 x 3 system was seen to
    # change in the last bit between identical calls (about 1 in 6), gelsd's never
    solution: torch.Tensor = torch.linalg.lstsq(hessian, -grad[:, None],
                                                driver="gelsd").solution[:, 0]
    return solution


def krylov_roots(coefficients: torch.Tensor, top: float) -> np.ndarray:
    """The roots t (complex) of the error polynomial 1 - t q(t), q in the Chebyshev form."""
    cheb = np.polynomial.chebyshev
    q = coefficients.numpy()
    p = cheb.chebsub([1.0], cheb.chebmul([top / 2, top / 2], q))   # t = top (u + 1) / 2
    roots: np.ndarray = (cheb.chebroots(p) + 1) * top / 2
    return roots
