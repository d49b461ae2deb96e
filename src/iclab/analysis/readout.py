"""What a model with a linear read-out computes, term by term (docs/theory.md section 2).

With the model's read-out (u, M) (``iclab.models.readout.LinearReadout``, any 1/n folded in),

    yhat = x_q^T Gamma X^T y              (linear in y, Gamma = u_y M_x^T + m_y u_x^T)
         + u_x^T X^T X M_x x_q            (nuisance "x_x": even in y)
         + u_y (y^T y)(m_y^T x_q)         (nuisance "y_y": even in y)
         + [attend_query] (u_x . x_q)(x_q . M_x x_q)   (nuisance "query")

The nuisance shares are each even term's variance as a share of the prediction's variance on
fresh prompts; the linear part is the algorithm (``gamma`` and ``gamma_parts``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch

from iclab.models.base import Model
from iclab.models.readout import LinearReadout
from iclab.utils.batches import Prompts

NUISANCE_TERMS = ("x_x", "y_y", "query")


@dataclass(frozen=True)
class NuisanceShares:
    """Each nuisance term's variance as a share of the prediction's variance on fresh prompts.

    x_x: u_x^T X^T X M_x x_q; y_y: u_y (y^T y)(m_y^T x_q); query: the attend-to-query term
    (0 when that option is off).
    """

    x_x: float
    y_y: float
    query: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def gamma_relative_error(gamma: np.ndarray, target: np.ndarray) -> float:
    """||gamma - target||_F / ||target||_F."""
    return float(np.linalg.norm(gamma - target) / np.linalg.norm(target))


def read_algorithm(model: Model, n: int) -> LinearReadout:
    """The model's read-out at prompt length n (ConfigError-free: the caller asks
    ``model.has_readout`` first)."""
    return model.readout(n)


def prediction_terms(readout: LinearReadout, prompts: Prompts,
                     attend_query: bool = False) -> dict[str, torch.Tensor]:
    """The linear term and each nuisance term on every prompt, float64: name -> (B,)."""
    d = readout.d
    u = torch.as_tensor(readout.u, dtype=torch.float64)
    M = torch.as_tensor(readout.M, dtype=torch.float64)
    gamma = torch.as_tensor(readout.gamma, dtype=torch.float64)
    p = prompts.to(torch.float64)
    X, y, x_q = p.X.cpu(), p.y.cpu(), p.x_q.cpu()
    u_x, u_y, M_x, m_y = u[:d], u[d], M[:d], M[d]
    Xty = torch.einsum("bnd,bn->bd", X, y)                     # (B, d)
    Mx_q = x_q @ M_x.T                                          # (B, d)
    my_q = x_q @ m_y                                            # (B,)
    terms = {
        "linear": ((x_q @ gamma) * Xty).sum(-1),
        "x_x": (torch.einsum("bnd,d->bn", X, u_x) * torch.einsum("bnd,bd->bn", X, Mx_q)).sum(-1),
        "y_y": u_y * (y * y).sum(-1) * my_q,
        "query": torch.zeros_like(my_q),
    }
    if attend_query:
        terms["query"] = (x_q @ u_x) * (x_q * Mx_q).sum(-1)
    return terms


def nuisance_shares(readout: LinearReadout, prompts: Prompts,
                    attend_query: bool = False) -> NuisanceShares:
    """Var(term) / Var(yhat) for each nuisance term, on the given prompts."""
    terms = prediction_terms(readout, prompts, attend_query)
    total = sum(terms.values(), torch.zeros_like(terms["linear"]))
    variance = float(total.var())
    if variance <= 0:
        return NuisanceShares(0.0, 0.0, 0.0)
    return NuisanceShares(**{name: float(terms[name].var()) / variance
                             for name in NUISANCE_TERMS})
