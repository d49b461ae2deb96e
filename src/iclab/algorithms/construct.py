"""LSA weights that implement a given preconditioned one-step GD exactly."""

from __future__ import annotations

import numpy as np
import torch

from iclab.models.lsa.layer import LinearSelfAttention
from iclab.models.lsa.options import LSAOptions
from iclab.utils.errors import ConfigError


def lsa_from_gamma(
    gamma: np.ndarray | torch.Tensor,
    options: LSAOptions | None = None,
    n: int | None = None,
    dtype: torch.dtype = torch.float64,
) -> LinearSelfAttention:
    """An LSA whose prediction is x_q^T Gamma X^T y on every prompt, with no nuisance term.

    gamma: (d, d). With u = W_V^T h = e_{d+1} (u_x = 0, u_y = 1) and
    W_K^T W_Q = [[Gamma^T, 0], [0, 0]] (so M_x = Gamma^T, m_y = 0), u_y M_x^T = Gamma.
    Needs key_dim >= d and value_dim >= 1; with ``normalise`` the weights are scaled by n
    (which must then be given). ``attend_query`` is refused: its cubic term is not GD.
    """
    G = torch.as_tensor(np.asarray(gamma) if not torch.is_tensor(gamma) else gamma, dtype=dtype)
    if G.ndim != 2 or G.shape[0] != G.shape[1]:
        raise ConfigError(f"gamma must be a square (d, d) matrix, got shape {tuple(G.shape)}")
    d = int(G.shape[0])
    options = options or LSAOptions()
    k, m = options.key_width(d), options.value_width(d)
    if k < d:
        raise ConfigError(f"key_dim must be >= d={d} to implement a full Gamma, got {k}")
    if options.attend_query:
        raise ConfigError("attend_query adds a cubic term; constructed GD weights need it off")
    scale = 1.0
    if options.normalise:
        if n is None or n < 1:
            raise ConfigError("normalise=True needs the prompt length n >= 1")
        scale = float(n)
    model = LinearSelfAttention(d, options, dtype=dtype)
    with torch.no_grad():
        W_K = torch.zeros(k, d + 1, dtype=dtype)
        W_K[:d, :d] = torch.eye(d, dtype=dtype)
        W_Q = torch.zeros(k, d + 1, dtype=dtype)
        W_Q[:d, :d] = scale * G.T
        W_V = torch.zeros(m, d + 1, dtype=dtype)
        W_V[0, d] = 1.0
        h = torch.zeros(m, dtype=dtype)
        h[0] = 1.0
        model.W_K.copy_(W_K)
        model.W_Q.copy_(W_Q)
        model.W_V.copy_(W_V)
        model.h.copy_(h)
    return model
