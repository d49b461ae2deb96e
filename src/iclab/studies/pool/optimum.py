"""The global optimum of the exact pool loss over all one-layer LSA weights, nuisance included,
and the nuisance-free optimum beside it (docs/theory.md section 15.2).

For fixed u the pool loss is a convex quadratic in M whose Hessian is kron(A(u), Sigma_x):

    A(u) = mean_k [n(n+1) g_k g_k^T + n (u^T C_k u) C_k],   B(u) = mean_k [n g_k w_k^T],
    g_k = C(w_k) u,   M*(u) = A(u)^{-1} B(u),
    f(u) = min_M L(u, M) = mean_k [w_k^T S w_k] + sigma^2 - tr(S B(u)^T A(u)^{-1} B(u)).

f is invariant under u -> c u (c != 0), so the nonconvex part of the problem lives on the
sphere of R^{d+1}: d dimensions, searched by L-BFGS from many starts (the d+1 coordinate
axes and seeded random directions), M then exact. The nuisance-free optimum (u_x = 0,
m_y = 0) is the convex problem u = e_{d+1}, last row of M zero: M_x = A_xx^{-1} B_x.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from iclab.studies.pool.loss import PoolLoss
from iclab.utils.seeding import make_generator

DEFAULT_STARTS = 24
"""Random starting directions of the search over u, beside the d+1 coordinate axes."""
SAME_OPTIMUM = 1e-9
"""Two starts reached the same optimum when their losses differ by at most this, relatively."""


def _solve(A: torch.Tensor, B: torch.Tensor, sigma: float) -> torch.Tensor:
    """A^{-1} B (A positive definite when sigma > 0; the pseudo-inverse at sigma = 0)."""
    solved: torch.Tensor = torch.linalg.solve(A, B) if sigma > 0 else \
        torch.linalg.pinv(A, hermitian=True) @ B
    return solved


def reduced(loss: PoolLoss, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(f(u), M*(u)): the pool loss minimised over M for this u, and the minimiser (d+1, d)."""
    n, C, W, S = loss.n, loss.token_covariances, loss.tasks, loss.covariance_x
    u = u / u.norm()
    G = C @ u                                                         # (K, d+1)
    s = G @ u                                                         # (K,)
    K = W.shape[0]
    A = n * (n + 1) * (G.T @ G) / K + n * torch.einsum("k,kij->ij", s, C) / K
    B = n * (G.T @ W) / K                                             # (d+1, d)
    M = _solve(A, B, loss.sigma)
    constant = torch.einsum("ka,ab,kb->k", W, S, W).mean() + loss.sigma**2
    return constant - torch.trace(S @ B.T @ M), M


def _search(loss: PoolLoss, start: torch.Tensor) -> tuple[float, torch.Tensor]:
    """L-BFGS on f from ``start``: (its loss, the direction u reached)."""
    u = start.clone().requires_grad_(True)
    optimiser = torch.optim.LBFGS([u], lr=1, max_iter=500, tolerance_grad=1e-13,
                                  tolerance_change=1e-16, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        optimiser.zero_grad()
        value = reduced(loss, u)[0]
        value.backward()  # type: ignore[no-untyped-call]
        return value

    for _ in range(3):
        optimiser.step(closure)  # type: ignore[no-untyped-call]
    with torch.no_grad():
        direction = u / u.norm()
        return float(reduced(loss, direction)[0]), direction


@dataclass(frozen=True)
class PoolOptimum:
    """The optimal one-layer LSA for a pool: u (d+1,) with |u| = 1 (sign: u_y >= 0), M (d+1,
    d), Gamma = u_y M_x^T + m_y u_x^T (d, d), its loss; the nuisance-free optimum's loss and
    Gamma; how many of the search's starts reached the best loss."""

    loss: float
    u: np.ndarray
    M: np.ndarray
    gamma: np.ndarray
    loss_nuisance_free: float
    gamma_nuisance_free: np.ndarray
    starts: int
    starts_at_best: int

    @property
    def nuisance(self) -> dict[str, np.ndarray]:
        """The nuisance parts: u_x (d,) and m_y (d,)."""
        d = self.M.shape[1]
        return {"u_x": self.u[:d], "m_y": self.M[d]}

    def to_json(self) -> dict[str, Any]:
        return {
            "loss_star": self.loss,
            "loss_star_nuisance_free": self.loss_nuisance_free,
            "gamma": self.gamma.tolist(),
            "gamma_nuisance_free": self.gamma_nuisance_free.tolist(),
            "u": self.u.tolist(),
            "M": self.M.tolist(),
            "u_x": self.nuisance["u_x"].tolist(),
            "m_y": self.nuisance["m_y"].tolist(),
            "u_y": float(self.u[-1]),
            "search": {"starts": self.starts, "starts_at_best": self.starts_at_best},
        }


def nuisance_free_optimum(loss: PoolLoss) -> tuple[float, np.ndarray]:
    """(loss, Gamma) of the best weights with u_x = 0 and m_y = 0 (a convex problem)."""
    d = loss.d
    u = torch.zeros(d + 1, dtype=torch.float64)
    u[d] = 1.0
    n, C, W = loss.n, loss.token_covariances, loss.tasks
    G = C @ u
    K = W.shape[0]
    A = (n * (n + 1) * (G.T @ G) + n * torch.einsum("k,kij->ij", G @ u, C)) / K
    B = n * (G.T @ W) / K
    Mx = _solve(A[:d, :d], B[:d], loss.sigma)
    M = torch.cat([Mx, torch.zeros(1, d, dtype=torch.float64)])
    return float(loss(u, M)), Mx.T.numpy()


def local_optimum(loss: PoolLoss, u: torch.Tensor) -> float:
    """The loss of the local minimum of f that L-BFGS reaches from the direction of u (d+1,)
    (M exact along the way): where weights with this u lie, polished."""
    return _search(loss, u.to(torch.float64).detach())[0]


def pool_optimum(loss: PoolLoss, starts: int = DEFAULT_STARTS, seed: int = 0) -> PoolOptimum:
    """The global optimum of ``loss`` (section 15.2): the best of L-BFGS searches over u from
    the d+1 axes and ``starts`` seeded random directions, M exact for that u (its cost:
    ``cost.pool_work``; ``iclab theory`` bounds it up front)."""
    d = loss.d
    generator = make_generator(seed, "pool-optimum")
    initial = [*torch.eye(d + 1, dtype=torch.float64),
               *torch.randn(starts, d + 1, generator=generator, dtype=torch.float64)]
    found = [_search(loss, start) for start in initial]
    best_loss, best_u = min(found, key=lambda item: item[0])
    at_best = sum(value <= best_loss + SAME_OPTIMUM * abs(best_loss) for value, _ in found)
    u = best_u.clone()
    pivot = d if abs(float(u[d])) > 1e-12 else int(torch.argmax(u.abs()))
    u = u if float(u[pivot]) >= 0 else -u
    with torch.no_grad():
        value, M = reduced(loss, u)
    gamma = (u[d] * M[:d].T + torch.outer(M[d], u[:d])).numpy()
    free_loss, free_gamma = nuisance_free_optimum(loss)
    return PoolOptimum(float(value), u.numpy(), M.numpy(), gamma, free_loss, free_gamma,
                       len(initial), int(at_best))
