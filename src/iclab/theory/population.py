"""The exact population loss of any one-layer LSA on linear Gaussian tasks (no sampling).

The prediction (docs/theory.md sections 2 and 8) is yhat = u^T Z M' x_q + [attend_query] T with
M' = M / n when the model normalises (M' = M otherwise), T = (u_x . x_q)(x_q . M'_x x_q), and
the loss is L = E[(yhat - y_q)^2], y_q = w . x_q + sigma eps_q. Write S = Sigma_x,
Omega = Sigma_w, u = [alpha; beta], M' = [A; c^T] (A: (d, d), c: (d,)).

Step 1, the prompt given (w, x_q). The examples' tokens are e_i = L g_i with g_i ~ N(0, I_{d+1})
and L = [[L_x, 0], [w^T L_x, sigma]], so Z = L W L^T with W ~ Wishart(n, I_{d+1}) independent of
(w, x_q, eps_q), and u^T Z M' x_q = p^T W q with p = L^T u, q = L^T M' x_q. The Wishart moments
E[W] = n I and E[(a^T W b)(c^T W e)] = n^2 (a.b)(c.e) + n[(a.c)(b.e) + (a.e)(b.c)] give

    E[p^T W q] = n p.q,     E[(p^T W q)^2] = n(n+1) (p.q)^2 + n |p|^2 |q|^2,
    L = E[n(n+1)(p.q)^2 + n|p|^2|q|^2 + 2n (p.q) T - 2n (p.q)(w.x_q) + T^2] + tr(S Omega) + sigma^2.

Step 2, the task w ~ N(0, Omega) given x_q. With r_x = A x_q, r_y = c . x_q and
k0 = A^T S alpha + sigma^2 beta c, P = alpha c^T + beta A, e0 = alpha^T S alpha + sigma^2 beta^2,

    p.q   = k0 . x_q + (S P x_q) . w + beta r_y w^T S w,
    |p|^2 = e0 + 2 beta (S alpha) . w + beta^2 w^T S w,
    |q|^2 = r_x^T S r_x + sigma^2 r_y^2 + 2 r_y (S r_x) . w + r_y^2 w^T S w,

and for Gaussian w only even powers survive (Isserlis), with t1 = tr(S Omega),
t2 = tr(S Omega S Omega), E[(w^T S w)^2] = t1^2 + 2 t2 =: t4.

Step 3, the query x_q ~ N(0, S): Gaussian moments up to fourth order, and the sixth for T^2.
With X = S Omega S, trFS = tr(A^T S A S) + sigma^2 c^T S c, a = k0 + beta t1 c and
A_s = (A + A^T) / 2:

    E[(p.q)^2]      = k0^T S k0 + 2 beta t1 k0^T S c + tr(P^T X P S) + beta^2 t4 c^T S c
    E[|p|^2 |q|^2]  = (e0 + beta^2 t1) trFS + (e0 t1 + beta^2 t4) c^T S c + 4 beta alpha^T X A S c
    E[(p.q)(w.x_q)] = tr(P^T X)
    E[(p.q) T]      = (a^T S alpha) tr(A S) + a^T S (A + A^T) S alpha
    E[T^2]          = alpha^T S alpha (tr(A S)^2 + 2 tr(A_s S A_s S))
                      + 4 alpha^T S A S alpha tr(A S) + 8 alpha^T S A_s S A_s S alpha.

Everything is torch float64, differentiable in (u, M): autograd gives the exact gradient, which
``iclab train --exact`` descends. With no nuisance term (alpha = 0, c = 0, beta A = Gamma^T) it
reduces to ``iclab.theory.gaussian.gd_term_loss``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from iclab.tasks.base import check_scalars
from iclab.tasks.covariance import validate_covariance
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.errors import ConfigError


@dataclass(frozen=True, eq=False)
class PopulationLoss:
    """The exact loss E[(yhat - y_q)^2] of one-layer LSA parameters on one linear Gaussian task.

    Holds the task's constants (float64 on one device); call it on (u, M) as many times as
    needed. sigma_x, sigma_w: (d, d) symmetric positive definite; n >= 1; sigma >= 0
    (ConfigError otherwise).
    """

    n: int
    sigma: float
    sigma_x: torch.Tensor
    sigma_w: torch.Tensor
    _x: torch.Tensor = field(init=False, repr=False)     # X = S Omega S: (d, d)
    _t1: torch.Tensor = field(init=False, repr=False)    # tr(S Omega)
    _t4: torch.Tensor = field(init=False, repr=False)    # E[(w^T S w)^2]

    def __post_init__(self) -> None:
        for name in ("sigma_x", "sigma_w"):  # symmetric positive definite, or ConfigError
            matrix = getattr(self, name)
            if not isinstance(matrix, torch.Tensor) or matrix.dim() != 2:
                raise ConfigError(f"{name} must be a (d, d) tensor, got {matrix!r}")
            validate_covariance(matrix.detach().cpu().double().numpy(),
                                int(self.sigma_x.shape[0]), name)
        check_scalars(int(self.sigma_x.shape[0]), self.n, self.sigma)
        s_omega = self.sigma_x @ self.sigma_w
        t1 = torch.trace(s_omega)
        object.__setattr__(self, "_x", s_omega @ self.sigma_x)
        object.__setattr__(self, "_t1", t1)
        object.__setattr__(self, "_t4", t1**2 + 2 * torch.trace(s_omega @ s_omega))

    @classmethod
    def from_task(
        cls, task: LinearGaussian, device: torch.device | str = "cpu"
    ) -> PopulationLoss:
        """The population loss of ``task`` (its covariances copied to ``device`` in float64)."""

        def tensor(matrix: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(matrix, dtype=torch.float64, device=torch.device(device))

        return cls(task.n, float(task.sigma), tensor(task.sigma_x), tensor(task.sigma_w))

    @property
    def d(self) -> int:
        return int(self.sigma_x.shape[0])

    def __call__(
        self,
        u: torch.Tensor,
        M: torch.Tensor,
        normalise: bool = False,
        attend_query: bool = False,
    ) -> torch.Tensor:
        """The loss of u: (d+1,), M: (d+1, d) (as from ``LinearSelfAttention.effective()``).

        ``normalise``: the attention sum is divided by n; ``attend_query``: the query token
        attends to itself. Returns a float64 scalar tensor, differentiable in u and M.
        """
        d, n, s2 = self.d, self.n, self.sigma**2
        if u.shape != (d + 1,) or M.shape != (d + 1, d):
            raise ValueError(
                f"u must be ({d + 1},) and M ({d + 1}, {d}); got {tuple(u.shape)}, {tuple(M.shape)}"
            )
        S, X, t1, t4 = self.sigma_x, self._x, self._t1, self._t4
        u = u.to(S)
        M = M.to(S) / n if normalise else M.to(S)
        alpha, beta, A, c = u[:d], u[d], M[:d], M[d]

        S_alpha, S_c = S @ alpha, S @ c
        cSc = c @ S_c
        k0 = A.T @ S_alpha + s2 * beta * c                       # (d,)
        P = torch.outer(alpha, c) + beta * A                     # (d, d)
        e0 = alpha @ S_alpha + s2 * beta**2
        trFS = (A * (S @ A @ S)).sum() + s2 * cSc

        pq2 = (k0 @ (S @ k0) + 2 * beta * t1 * (k0 @ S_c)
               + (P * (X @ P @ S)).sum() + beta**2 * t4 * cSc)
        pp_qq = ((e0 + beta**2 * t1) * trFS + (e0 * t1 + beta**2 * t4) * cSc
                 + 4 * beta * ((X @ alpha) @ (A @ S_c)))
        pq_target = (P * X).sum()
        loss = n * (n + 1) * pq2 + n * pp_qq - 2 * n * pq_target + t1 + s2
        if attend_query:
            loss = loss + 2 * n * self._query_cross(alpha, A, k0 + beta * t1 * c)
            loss = loss + self._query_square(alpha, A)
        return loss

    def _query_cross(self, alpha: torch.Tensor, A: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        """E[(a . x)(alpha . x)(x^T A x)] for x ~ N(0, Sigma_x)."""
        S = self.sigma_x
        S_alpha = S @ alpha
        return (a @ S_alpha) * torch.trace(A @ S) + a @ S @ (A + A.T) @ S_alpha

    def _query_square(self, alpha: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
        """E[T^2] = E[(alpha . x)^2 (x^T A x)^2] for x ~ N(0, Sigma_x) (15 Isserlis pairings)."""
        S = self.sigma_x
        A_s = (A + A.T) / 2
        S_alpha = S @ alpha
        trAS = torch.trace(A_s @ S)
        AsS = A_s @ S
        return (
            (alpha @ S_alpha) * (trAS**2 + 2 * torch.trace(AsS @ AsS))
            + 4 * (S_alpha @ A_s @ S_alpha) * trAS
            + 8 * (S_alpha @ A_s @ S @ A_s @ S_alpha)
        )
