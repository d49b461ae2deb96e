"""The exact population loss of a one-layer LSA when the task is drawn uniformly from a finite
pool w_1..w_K (docs/theory.md section 15.1).

Given the task w, a token e = [x; y] is Gaussian with mean 0 and covariance

    C(w) = [[S, S w], [w^T S, w^T S w + sigma^2]]          (S = Sigma_x),

so Z = sum_i e_i e_i^T is Wishart(n, C(w)) and, for yhat = u^T Z M x_q (M divided by n when
the model normalises), with g = C(w) u and b = M^T g:

    E[yhat | w, x_q] = n b . x_q,
    E[yhat^2 | w, x_q] = n(n+1) (b . x_q)^2 + n (u^T C u)(x_q^T M^T C M x_q),
    L(w) = n(n+1) b^T S b + n (u^T C u) tr(M^T C M S) - 2n b^T S w + w^T S w + sigma^2,

and the pool loss is the mean of L(w_k) over the pool. Float64 torch, differentiable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from iclab.studies.pool.pool import check_pool
from iclab.tasks.base import check_scalars
from iclab.tasks.covariance import validate_covariance


@dataclass(frozen=True, eq=False)
class PoolLoss:
    """The exact loss E[(yhat - y_q)^2] of one-layer LSA weights (u, M) with w uniform on a
    pool; x ~ N(0, sigma_x), label noise sigma.

    pool: (K, d); sigma_x: (d, d) positive definite (None: I); n >= 1; sigma >= 0.
    """

    pool: np.ndarray
    n: int
    sigma: float
    sigma_x: np.ndarray | None = None
    _w: torch.Tensor = field(init=False, repr=False)      # (K, d)
    _s: torch.Tensor = field(init=False, repr=False)      # (d, d)
    _c: torch.Tensor = field(init=False, repr=False)      # (K, d+1, d+1): C(w_k)

    def __post_init__(self) -> None:
        w = check_pool(self.pool, int(np.shape(self.pool)[-1]) if np.ndim(self.pool) == 2 else 0)
        d = w.shape[1]
        check_scalars(d, self.n, self.sigma)
        s = np.eye(d) if self.sigma_x is None else validate_covariance(self.sigma_x, d,
                                                                      "sigma_x")
        W, S = torch.as_tensor(w), torch.as_tensor(s)
        C = torch.zeros(len(w), d + 1, d + 1, dtype=torch.float64)
        C[:, :d, :d] = S
        C[:, :d, d] = C[:, d, :d] = W @ S
        C[:, d, d] = torch.einsum("ka,ab,kb->k", W, S, W) + self.sigma**2
        for name, value in (("_w", W), ("_s", S), ("_c", C)):
            object.__setattr__(self, name, value)

    @property
    def d(self) -> int:
        return int(self._w.shape[1])

    @property
    def tasks(self) -> torch.Tensor:
        """The pool as a float64 tensor: (K, d)."""
        return self._w

    @property
    def covariance_x(self) -> torch.Tensor:
        """Sigma_x: (d, d) float64."""
        return self._s

    @property
    def token_covariances(self) -> torch.Tensor:
        """C(w_k) for every task of the pool: (K, d+1, d+1) float64."""
        return self._c

    def per_task(self, u: torch.Tensor, M: torch.Tensor, normalise: bool = False) -> torch.Tensor:
        """L(w_k) for each task: (K,). u: (d+1,), M: (d+1, d)."""
        d, n = self.d, self.n
        if u.shape != (d + 1,) or M.shape != (d + 1, d):
            raise ValueError(f"u must be ({d + 1},) and M ({d + 1}, {d}); got "
                             f"{tuple(u.shape)}, {tuple(M.shape)}")
        W, S, C = self._w, self._s, self._c
        u = u.to(torch.float64)
        M = M.to(torch.float64) / n if normalise else M.to(torch.float64)
        g = C @ u                                                   # (K, d+1)
        b = g @ M                                                   # (K, d): M^T g
        trace = torch.einsum("kij,ij->k", C, M @ S @ M.T)           # tr(M^T C M S)
        return (n * (n + 1) * torch.einsum("ka,ab,kb->k", b, S, b)
                + n * (g @ u) * trace
                - 2 * n * torch.einsum("ka,ab,kb->k", b, S, W)
                + torch.einsum("ka,ab,kb->k", W, S, W) + self.sigma**2)

    def __call__(self, u: torch.Tensor, M: torch.Tensor, normalise: bool = False) -> torch.Tensor:
        """The pool loss (the mean of ``per_task``): a float64 scalar tensor."""
        return self.per_task(u, M, normalise).mean()
