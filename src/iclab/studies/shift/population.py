"""The exact population loss of a one-layer LSA under a shifted Gaussian test law (no sampling).

The prediction is yhat = u^T Z M x_q with Z = sum_{i<=n} e_i e_i^T, e_i = [x_i; y_i] (the plain
sum: no 1/n, the query token not attended; a model that normalises is covered by passing M/n,
or ``normalise=True``; the attend-query term is not covered). The test law
(``iclab.studies.shift.laws.GaussianTestLaw``) has context covariates x_i ~ N(0, S), the query
x_q ~ N(0, Q), the task w ~ N(mu, Omega), noise sigma and n examples; the loss is
L = E[(yhat - y_q)^2], y_q = w . x_q + sigma eps_q. Write u = [alpha; beta], M = [A; c^T].

Step 1, given (w, x_q): as in ``iclab.theory.population``, Z = L W L^T with W ~ Wishart(n, I),
L L^T = C_w = Cov(e | w) = [[S, S w], [w^T S, s + sigma^2]], s = w^T S w. With p = L^T u and
q = L^T M x_q the Wishart moments give E[yhat] = n p.q and
E[yhat^2] = n(n+1)(p.q)^2 + n |p|^2 |q|^2, where

    p.q   = a(w) . x_q,        a(w) = M^T C_w u = k0 + G w + beta s c,
    |p|^2 = u^T C_w u        = e0 + 2 beta alpha^T S w + beta^2 s,
    |q|^2 = x_q^T B(w) x_q,  B(w) = M^T C_w M,

with k0 = A^T S alpha + sigma^2 beta c, G = (alpha c^T + beta A)^T S and
e0 = alpha^T S alpha + sigma^2 beta^2.

Step 2, the query x_q ~ N(0, Q), independent of w: every term is a quadratic form in x_q, so
E[(a.x_q)^2] = a^T Q a, E[(a.x_q)(w.x_q)] = a^T Q w, E[|q|^2] = tr(B Q) = f0 + 2 h.w + g s
with f0 = tr(A^T S A Q) + sigma^2 c^T Q c, h = S A Q c, g = c^T Q c. Hence

    L = E_w[ n(n+1) a^T Q a + n |p|^2 tr(B Q) - 2n a^T Q w + w^T Q w ] + sigma^2.

Step 3, the task w = mu + z, z ~ N(0, Omega): a polynomial of degree 4 in w. With mu != 0 the
odd moments no longer vanish; with R = Omega + mu mu^T the ones needed are

    E[w] = mu,  E[w w^T] = R,  E[s] = s1 = tr(S Omega) + mu^T S mu,
    E[w s] = mu s1 + 2 Omega S mu,
    E[s^2] = s1^2 + 2 tr(S Omega S Omega) + 4 mu^T S Omega S mu  (Var of a Gaussian quadratic form).

Expanding the products term by term:

    E[a^T Q a]      = k0^T Q k0 + 2 k0^T Q G mu + 2 beta s1 k0^T Q c + tr(G^T Q G R)
                      + 2 beta c^T Q G E[w s] + beta^2 g E[s^2]
    E[|p|^2 tr(BQ)] = e0 f0 + 2 e0 h.mu + e0 g s1 + 2 beta f0 alpha^T S mu + 4 beta alpha^T S R h
                      + 2 beta g alpha^T S E[w s] + beta^2 f0 s1 + 2 beta^2 h.E[w s]
                      + beta^2 g E[s^2]
    E[a^T Q w]      = k0^T Q mu + tr(G^T Q R) + beta c^T Q E[w s]
    E[w^T Q w]      = tr(Q R).

With Q = S and mu = 0 this is ``iclab.theory.population.PopulationLoss`` (plain sum, query not
attended). Everything is torch float64 and differentiable in (u, M).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from iclab.studies.shift.laws import GaussianTestLaw


@dataclass(frozen=True, eq=False)
class ShiftedPopulationLoss:
    """E[(u^T Z M x_q - y_q)^2] under one Gaussian test law, exactly.

    n >= 1, sigma >= 0; sigma_x (context), sigma_q (query), sigma_w: (d, d); w_mean: (d,);
    all float64 on one device. Call it on (u, M) as many times as needed.
    """

    n: int
    sigma: float
    sigma_x: torch.Tensor
    sigma_q: torch.Tensor
    sigma_w: torch.Tensor
    w_mean: torch.Tensor
    _R: torch.Tensor = field(init=False, repr=False)      # E[w w^T]: (d, d)
    _s1: torch.Tensor = field(init=False, repr=False)     # E[w^T S w]
    _ws: torch.Tensor = field(init=False, repr=False)     # E[w (w^T S w)]: (d,)
    _s2: torch.Tensor = field(init=False, repr=False)     # E[(w^T S w)^2]

    def __post_init__(self) -> None:
        S, Omega, mu = self.sigma_x, self.sigma_w, self.w_mean
        S_Omega = S @ Omega
        S_mu = S @ mu
        s1 = torch.trace(S_Omega) + mu @ S_mu
        object.__setattr__(self, "_R", Omega + torch.outer(mu, mu))
        object.__setattr__(self, "_s1", s1)
        object.__setattr__(self, "_ws", mu * s1 + 2 * Omega @ S_mu)
        object.__setattr__(self, "_s2", s1**2 + 2 * torch.trace(S_Omega @ S_Omega)
                           + 4 * S_mu @ Omega @ S_mu)

    @classmethod
    def from_law(
        cls, law: GaussianTestLaw, device: torch.device | str = "cpu"
    ) -> ShiftedPopulationLoss:
        """The loss under ``law`` (its arrays copied to ``device`` in float64)."""

        def tensor(array: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(array, dtype=torch.float64, device=torch.device(device))

        return cls(law.n, law.sigma, tensor(law.cov_x), tensor(law.cov_q), tensor(law.cov_w),
                   tensor(law.w_mean))

    @property
    def d(self) -> int:
        return int(self.sigma_x.shape[0])

    def __call__(self, u: torch.Tensor, M: torch.Tensor, normalise: bool = False) -> torch.Tensor:
        """The loss of u: (d+1,), M: (d+1, d): a float64 scalar tensor, differentiable.

        ``normalise``: the model divides its attention sum by n (M is used as M / n).
        """
        d, n, s2 = self.d, self.n, self.sigma**2
        if tuple(u.shape) != (d + 1,) or tuple(M.shape) != (d + 1, d):
            raise ValueError(
                f"u must be ({d + 1},) and M ({d + 1}, {d}); got {tuple(u.shape)}, {tuple(M.shape)}"
            )
        S, Q, mu = self.sigma_x, self.sigma_q, self.w_mean
        R, s1, ws, s_sq = self._R, self._s1, self._ws, self._s2
        u = u.to(S)
        M = M.to(S) / n if normalise else M.to(S)
        alpha, beta, A, c = u[:d], u[d], M[:d], M[d]

        S_alpha = S @ alpha
        Qc = Q @ c
        k0 = A.T @ S_alpha + s2 * beta * c                          # (d,)
        G = (torch.outer(alpha, c) + beta * A).T @ S                # (d, d): a = k0 + G w + ...
        e0 = alpha @ S_alpha + s2 * beta**2
        g = c @ Qc
        f0 = (A * (S @ A @ Q)).sum() + s2 * g                       # tr(A^T S A Q) + s2 c^T Q c
        h = S @ (A @ Qc)                                            # (d,)
        Qk0 = Q @ k0
        GtQ = G.T @ Q                                               # (d, d)

        a_Q_a = (k0 @ Qk0 + 2 * Qk0 @ (G @ mu) + 2 * beta * s1 * (k0 @ Qc)
                 + (GtQ @ G * R).sum() + 2 * beta * (Qc @ (G @ ws)) + beta**2 * g * s_sq)
        p_p_q_q = (e0 * f0 + 2 * e0 * (h @ mu) + e0 * g * s1 + 2 * beta * f0 * (S_alpha @ mu)
                   + 4 * beta * (S_alpha @ (R @ h)) + 2 * beta * g * (S_alpha @ ws)
                   + beta**2 * f0 * s1 + 2 * beta**2 * (h @ ws) + beta**2 * g * s_sq)
        a_Q_w = Qk0 @ mu + (GtQ * R).sum() + beta * (Qc @ ws)
        target = (Q * R).sum()                                      # E[(w . x_q)^2]
        return n * (n + 1) * a_Q_a + n * p_p_q_q - 2 * n * a_Q_w + target + s2


def gd_readout(gamma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(u, M) of one preconditioned GD step x_q^T Gamma X^T y: u = e_{d+1}: (d+1,),
    M = [Gamma^T; 0]: (d+1, d), for gamma: (d, d)."""
    d = gamma.shape[0]
    u = np.zeros(d + 1)
    u[d] = 1.0
    return u, np.vstack([np.asarray(gamma, dtype=np.float64).T, np.zeros((1, d))])


def shifted_population_loss(
    u: np.ndarray | torch.Tensor,
    M: np.ndarray | torch.Tensor,
    law: GaussianTestLaw,
    normalise: bool = False,
) -> float:
    """The exact loss of u: (d+1,), M: (d+1, d) under ``law`` as a float (float64 arithmetic)."""
    exact = ShiftedPopulationLoss.from_law(law)
    u64 = torch.as_tensor(np.asarray(u) if not torch.is_tensor(u) else u.detach(),
                          dtype=torch.float64)
    M64 = torch.as_tensor(np.asarray(M) if not torch.is_tensor(M) else M.detach(),
                          dtype=torch.float64)
    with torch.no_grad():
        return float(exact(u64.cpu(), M64.cpu(), normalise))
