"""The ``gla`` model: one layer of gated linear attention (Yang et al. 2024), as Li,
Tarzanagh, Rawat, Fazel and Oymak (2025) study it for in-context regression.

Tokens z_t = [x_t; y_t] (t = 1..n) and z_(n+1) = [x_q; 0]; q_t = W_q z_t, k_t = W_k z_t,
v_t = W_v z_t in R^p and a gate from each token, g_t = sigmoid(W_g z_t + b_g), one number
(``gate`` scalar) or one per key coordinate (vector). The state
S_t = S_(t-1) diag(g_t) + v_t k_t^T (a scalar gate scales all of S), read by the query:

    yhat = h^T S_(n+1) q_(n+1) = sum_t (h . v_t) sum_j omega_(t, j) k_(t, j) q_(n+1, j),
    omega_(t, j) = prod_(s = t+1..n+1) g_(s, j).

So gating is weighting: with gates that do not depend on the labels (W_g's y-column 0) the
part of yhat odd in the labels is sum_i y_i x_q^T Gamma_i x_i, WPGD with the weights
omega_i; with a constant gate (W_g = 0) they are fixed, omega_i = prod_(s > i) sigmoid(b_g)
(``position_gammas`` reads the gates at W_g = 0, exact only then). ``sample_weights`` gives
each prompt's own weights. Initialisation (seeded): projections N(0, init_scale^2),
h = 1/p, W_g = 0, b_g = ``gate_bias``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from iclab.studies.sequence.model_base import (
    ProjectedSequenceModel,
    normal_parameters,
    one_layer_hooks,
    prompt_tokens,
)
from iclab.studies.sequence.options import GLAOptions
from iclab.studies.sequence.readout import WeightedReadout, weighted_readout


class GatedLinearAttention(ProjectedSequenceModel):
    """One GLA layer (module docstring); trains on whole prompts."""

    name = "gla"
    description = ("one layer of gated linear attention, scalar or vector gate (Li et al. "
                   "2025): weighted preconditioned GD")
    options_class = GLAOptions
    hook_points = one_layer_hooks("the gated state at the query, sum_t omega_t W_k z_t "
                                  "(h . W_v z_t) (the value read out by h)", "its sum")

    @classmethod
    def parameter_count(cls, options: Any, d: int) -> int:
        p = options.width(d)
        gates = 1 if options.gate == "scalar" else p
        return int(3 * p * (d + 1) + p + gates * (d + 2))

    def __init__(self, d: int, options: GLAOptions | None = None,
                 generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        options = GLAOptions() if options is None else options
        options.check(d)
        self.options, self._d = options, d
        p = options.width(d)
        gates = 1 if options.gate == "scalar" else p
        device, draw = normal_parameters(options.init_scale, generator, dtype)
        self._init_projections(d, options, draw, dtype, device)
        self.W_g = nn.Parameter(torch.zeros(gates, d + 1, dtype=dtype, device=device))
        self.b_g = nn.Parameter(torch.full((gates,), float(options.gate_bias), dtype=dtype,
                                           device=device))

    @property
    def d(self) -> int:
        return self._d

    def _weights(self, tokens: torch.Tensor) -> torch.Tensor:
        """omega_(t, j) for every token: (B, T, gates), from the log-gates' suffix sums."""
        log_gates = functional.logsigmoid(tokens @ self.W_g.T + self.b_g)   # (B, T, gates)
        suffix = log_gates.flip(1).cumsum(1).flip(1)                        # sum_(s >= t)
        return torch.exp(suffix - log_gates)                                # sum_(s > t)

    def sample_weights(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor
                       ) -> torch.Tensor:
        """Each prompt's weights omega_(i, j) of its n examples: (B, n, gates)."""
        return self._weights(prompt_tokens(X, y, x_q))[:, :-1]

    def forward(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n), x_q: (B, d) -> yhat: (B,)."""
        tokens = prompt_tokens(X, y, x_q)                                   # (B, T, d+1)
        weights = self._weights(tokens)                                     # (B, T, 1 | p)
        query = tokens[:, -1] @ self.W_q.T                                  # (B, p)
        scores = (tokens @ self.W_k.T) * query[:, None] * weights           # (B, T, p)
        values = tokens @ (self.W_v.T @ self.head)                          # (B, T)
        yhat: torch.Tensor = (scores.sum(-1) * values).sum(-1)
        if self.recording_hooks():
            state = ((tokens @ self.W_k.T) * weights * values[..., None]).sum(1)  # (B, p)
            self.record("resid.0", tokens)
            self.record("state.1", state[:, None])
            self.record("attn.1", (query * state)[:, None])
        return yhat

    def position_gammas(self, n: int) -> np.ndarray:
        """Gamma_1..Gamma_n: (n, d, d), float64, with the gates at W_g = 0 (module
        docstring)."""
        d = self.d
        with torch.no_grad():
            W_q, W_k, W_v = (w.double() for w in (self.W_q, self.W_k, self.W_v))
            log_gate = functional.logsigmoid(self.b_g.double())             # (gates,)
            lags = torch.arange(n, 0, -1, dtype=torch.float64, device=log_gate.device)
            omega = torch.exp(lags[:, None] * log_gate)                      # (n, gates)
            omega = omega.expand(n, W_q.shape[0])
            hv = self.head.double() @ W_v                                    # (d+1,)
            # odd part: y_i [hv_y (k^x_i . q) weighted + (hv_x . x_i) (k_y . q) weighted]
            first = torch.einsum("ij,ja,jb->iab", omega, W_q[:, :d], W_k[:, :d]) * hv[d]
            second = torch.einsum("ij,ja,j,b->iab", omega, W_q[:, :d], W_k[:, d], hv[:d])
        return np.asarray((first + second).cpu().numpy(), dtype=np.float64)

    def wpgd_readout(self, n: int) -> WeightedReadout:
        """The WPGD read-out at prompt length n, exact when W_g = 0."""
        exact = bool(torch.all(self.W_g == 0))
        return weighted_readout(self.position_gammas(n), complete=exact)
