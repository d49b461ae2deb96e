"""The algorithm a one-layer LSA implements, read off its weights (THEORY.md section 2).

With u = [u_x; u_y] and M = [M_x; m_y^T],

    yhat = x_q^T Gamma X^T y                 (GD term, Gamma = u_y M_x^T)
         + u_x^T X^T X M_x x_q               (nuisance "x_x")
         + (u_x^T X^T y)(m_y^T x_q)          (nuisance "x_y")
         + u_y (y^T y)(m_y^T x_q)            (nuisance "y_y")

all divided by n when the model normalises, so Gamma here is always in THEORY.md's convention
(directly comparable with eta* and Gamma*).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch

from iclab.models.lsa import LinearSelfAttention
from iclab.tasks.base import Prompts


@dataclass(frozen=True)
class LearnedAlgorithm:
    """u: (d+1,), M: (d+1, d), gamma: (d, d) effective matrix, eta_hat = tr(gamma)/d,
    isotropy_err = ||gamma - eta_hat I||_F / ||gamma||_F (all float64)."""

    u: np.ndarray
    M: np.ndarray
    gamma: np.ndarray
    eta_hat: float
    isotropy_err: float


def _effective64(model: LinearSelfAttention, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """u, M in float64 on the CPU, with the 1/n normalisation folded into M."""
    with torch.no_grad():
        u, M = model.effective()
        u, M = u.detach().to("cpu", torch.float64), M.detach().to("cpu", torch.float64)
    if model.options.normalise:
        M = M / n
    return u, M


def read_algorithm(model: LinearSelfAttention, n: int) -> LearnedAlgorithm:
    """Gamma = u_y M_x^T (divided by n for a normalising model), eta_hat and isotropy error."""
    d = model.d
    u, M = _effective64(model, n)
    gamma = (u[d] * M[:d].T).numpy()
    eta_hat = float(np.trace(gamma) / d)
    norm = float(np.linalg.norm(gamma))
    deviation = float(np.linalg.norm(gamma - eta_hat * np.eye(d)))
    isotropy = deviation / norm if norm > 0 else float("nan")
    return LearnedAlgorithm(u=u.numpy(), M=M.numpy(), gamma=gamma, eta_hat=eta_hat,
                            isotropy_err=isotropy)


def gamma_relative_error(gamma: np.ndarray, target: np.ndarray) -> float:
    """||gamma - target||_F / ||target||_F."""
    return float(np.linalg.norm(gamma - target) / np.linalg.norm(target))


@dataclass(frozen=True)
class NuisanceShares:
    """Each nuisance term's variance as a share of the prediction's variance on fresh prompts.

    x_x: u_x^T X^T X M_x x_q; x_y: (u_x^T X^T y)(m_y^T x_q); y_y: u_y (y^T y)(m_y^T x_q);
    query: the attend-to-query term (0 when that option is off).
    """

    x_x: float
    x_y: float
    y_y: float
    query: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def nuisance_terms(model: LinearSelfAttention, prompts: Prompts) -> dict[str, torch.Tensor]:
    """The GD term and each nuisance term on every prompt, float64: name -> (B,)."""
    d, n = model.d, prompts.n
    u, M = _effective64(model, n)
    p = prompts.to(torch.float64)
    X, y, x_q = p.X.cpu(), p.y.cpu(), p.x_q.cpu()
    u_x, u_y, M_x, m_y = u[:d], u[d], M[:d], M[d]
    Xty = torch.einsum("bnd,bn->bd", X, y)                     # (B, d)
    Mx_q = x_q @ M_x.T                                          # (B, d)
    my_q = x_q @ m_y                                            # (B,)
    terms = {
        "gd": u_y * (Xty * Mx_q).sum(-1),
        "x_x": (torch.einsum("bnd,d->bn", X, u_x) * torch.einsum("bnd,bd->bn", X, Mx_q)).sum(-1),
        "x_y": (Xty @ u_x) * my_q,
        "y_y": u_y * (y * y).sum(-1) * my_q,
        "query": torch.zeros_like(my_q),
    }
    if model.options.attend_query:
        # e_q = [x_q; 0]: (u_x . x_q)(x_q . M_x x_q); M already carries any 1/n.
        terms["query"] = (x_q @ u_x) * (x_q * Mx_q).sum(-1)
    return terms


def nuisance_shares(model: LinearSelfAttention, prompts: Prompts) -> NuisanceShares:
    """Var(term) / Var(yhat) for each nuisance term, on the given prompts."""
    terms = nuisance_terms(model, prompts)
    total = sum(terms.values(), torch.zeros_like(terms["gd"]))
    variance = float(total.var())
    if variance <= 0:
        return NuisanceShares(0.0, 0.0, 0.0, 0.0)
    shares = {name: float(terms[name].var()) / variance for name in ("x_x", "x_y", "y_y", "query")}
    return NuisanceShares(**shares)
