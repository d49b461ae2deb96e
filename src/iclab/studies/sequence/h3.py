"""The ``h3`` model: one H3-like state-space layer (Fu et al. 2023) in the form Li, Rawat and
Oymak (2024) study for in-context regression.

Tokens z_i = [x_i; y_i] (i = 1..n) and z_(n+1) = [x_q; 0]; projections q_t = W_q z_t,
k_t = W_k z_t, v_t = W_v z_t in R^p. The keys pass a causal shift filter,
kbar_t = sum_m s_m * k_(t-m) (m < shift_taps, per channel), the gated products u_t =
kbar_t * v_t a diagonal state-space convolution with per-channel filter
f_(j,m) = sum_s C_(j,s) a_(j,s)^m (a = sigmoid(lambda) in (0, 1), ``state`` modes), and the
query multiplies the result:

    yhat = sum_j h_j q_(n+1, j) sum_(t <= n+1) f_(j, n+1-t) u_(t, j).

With the shift's lag-0 tap alone, the part of yhat odd in the labels is
sum_i y_i x_q^T Gamma_i x_i with Gamma_i = sum_j h_j s_(0,j) f_(j, n+1-i) q^x_j (e_j a_j +
b_j c_j)^T (q^x_j, a_j, c_j the x-parts of the rows of W_q, W_k, W_v and b_j, e_j their
y-entries): sample weighting by the filters (``position_gammas``; ``wpgd_readout`` fits
omega_i Gamma). The filters are computed explicitly (the convolution is a sum over lags).
Initialisation (seeded): projections N(0, init_scale^2), h_j = 1/p, the shift's lag-0 tap 1
and the others 0, lambda spread over (-2, 4) and C = 1/state.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from iclab.studies.sequence.family import drift_of
from iclab.studies.sequence.model_base import (
    ProjectedSequenceModel,
    normal_parameters,
    one_layer_hooks,
    prompt_tokens,
)
from iclab.studies.sequence.options import H3Options
from iclab.studies.sequence.readout import WeightedReadout, weighted_readout


class H3(ProjectedSequenceModel):
    """One H3-like layer (module docstring); trains on whole prompts."""

    name = "h3"
    description = ("one H3-like state-space layer (shift, diagonal SSM convolution, "
                   "multiplicative gating; Li, Rawat and Oymak 2024): weighted preconditioned GD")
    options_class = H3Options
    hook_points = one_layer_hooks("the state-space convolution's output at the query, "
                                  "sum_t f_(j, T-t) (shifted keys * values)_t per channel",
                                  "its product with h")

    def bounded_by_lsa_optimum(self, task: Any) -> bool:
        """True on i.i.d. isotropic linear Gaussian prompts (``drift_of`` is 1). There the
        label-odd lag-0 part of yhat is WPGD, whose optimum on exchangeable prompts is the
        uniform-weight one, L* (Li, Rawat and Oymak 2024); every other term (label-even ones,
        and the shift's lag m >= 1 terms y_i x_q^T A x_(i+m) or y_n times a cubic in x_q) holds
        some independent zero-mean x_j an odd number of times against y_q and against every
        WPGD term, so it is uncorrelated with both and can only add to the loss. On drifting
        prompts the bound is the WPGD optimum, not L*."""
        return drift_of(task) == 1.0

    @classmethod
    def parameter_count(cls, options: Any, d: int) -> int:
        p = options.width(d)
        return int(3 * p * (d + 1) + p + options.shift_taps * p + 2 * p * options.state)

    def __init__(self, d: int, options: H3Options | None = None,
                 generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        options = H3Options() if options is None else options
        options.check(d)
        self.options, self._d = options, d
        p, state = options.width(d), options.state
        device, draw = normal_parameters(options.init_scale, generator, dtype)
        self._init_projections(d, options, draw, dtype, device)
        shift = torch.zeros(options.shift_taps, p, dtype=dtype, device=device)
        shift[0] = 1.0
        self.shift = nn.Parameter(shift)
        spread = torch.linspace(-2.0, 4.0, state, dtype=dtype, device=device)
        self.log_decay = nn.Parameter(spread.expand(p, state).clone())
        self.C = nn.Parameter(torch.full((p, state), 1.0 / state, dtype=dtype, device=device))

    @property
    def d(self) -> int:
        return self._d

    def filters(self, length: int) -> torch.Tensor:
        """f_(j, m) for m = 0..length-1: (p, length)."""
        decay = torch.sigmoid(self.log_decay)                               # (p, S)
        lags = torch.arange(length, dtype=decay.dtype, device=decay.device)
        powers = torch.exp(torch.log(decay)[..., None] * lags)               # (p, S, length)
        return torch.einsum("js,jsm->jm", self.C, powers)

    def forward(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n), x_q: (B, d) -> yhat: (B,)."""
        tokens = prompt_tokens(X, y, x_q)                                    # (B, T, d+1)
        length = tokens.shape[1]
        keys = tokens @ self.W_k.T                                           # (B, T, p)
        shifted = torch.zeros_like(keys)
        for lag in range(min(self.options.shift_taps, length)):
            shifted[:, lag:] = shifted[:, lag:] + self.shift[lag] * keys[:, : length - lag]
        products = shifted * (tokens @ self.W_v.T)                           # (B, T, p)
        weights = self.filters(length).flip(-1)                              # f_(j, T-t)
        pooled = torch.einsum("btj,jt->bj", products, weights)
        query = tokens[:, -1] @ self.W_q.T                                   # (B, p)
        yhat: torch.Tensor = (query * pooled) @ self.head
        if self.recording_hooks():
            self.record("resid.0", tokens)
            self.record("state.1", pooled[:, None])
            self.record("attn.1", (query * pooled)[:, None])
        return yhat

    def position_gammas(self, n: int) -> np.ndarray:
        """Gamma_1..Gamma_n: (n, d, d), float64, of the lag-0 part (module docstring)."""
        d = self.d
        with torch.no_grad():
            W_q, W_k, W_v = (w.double() for w in (self.W_q, self.W_k, self.W_v))
            f = self.filters(n + 1).double().flip(-1)[:, :n]                 # f_(j, n+1-i)
            scale = self.head.double() * self.shift[0].double()              # (p,)
            right = W_v[:, d, None] * W_k[:, :d] + W_k[:, d, None] * W_v[:, :d]
            stack = torch.einsum("j,ji,ja,jb->iab", scale, f, W_q[:, :d], right)
        return np.asarray(stack.cpu().numpy(), dtype=np.float64)

    def wpgd_readout(self, n: int) -> WeightedReadout:
        """The WPGD read-out at prompt length n; complete when the shift has no lag > 0."""
        exact = bool(torch.all(self.shift[1:] == 0)) if self.options.shift_taps > 1 else True
        return weighted_readout(self.position_gammas(n), complete=exact)
