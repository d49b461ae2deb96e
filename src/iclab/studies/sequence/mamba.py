"""The ``mamba`` model: a stack of Mamba-style selective state-space blocks (Gu and Dao
2023) in plain PyTorch, as Park et al. (2024) and Grazzi et al. (2024) compare with
transformers on in-context regression, without the CUDA kernels.

Tokens e_t = [x_t; y_(t-1)] (y_0 = 0), so position t sees x_1..x_t and y_1..y_(t-1) and
predicts y_t: one pass gives every prefix's prediction (``predict_prefixes``), and the query
is position n+1. A read-in maps e_t to the residual stream (``width``); each block adds
Mixer(RMSNorm(h)) to it:

    u, z   = W_in h_t, W_z h_t                     (channels p = width)
    u      = silu(causal depthwise conv(u))        (``conv`` taps)
    Delta  = softplus(W_delta u + b_delta)         (one step per channel, input-dependent)
    B, C   = W_B u, W_C u                          (``state`` N, input-dependent)
    s_t    = exp(Delta_t A) * s_(t-1) + Delta_t B_t u_t    (A = -exp(A_log): (p, N))
    out_t  = W_out ((C_t . s_t + D u_t) * silu(z_t)),

the recurrence h_t = a_t * h_(t-1) + b_t (h_0 = 0) run by the parallel scan or the
sequential reference (``scan``): the parallel scan is Hillis and Steele's, log2(T) rounds,
each combining every position with the one 2^k before it, (a, b) o (a', b') =
(a a', a' b + b'). A final
RMSNorm and a linear read-out give one number per position. Initialisation (seeded): weights
N(0, init_scale^2), A_log = log(1..N) per channel, b_delta such that Delta starts near 0.05,
D = 1, norms' gains 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn import functional

from iclab.models.hooks import HookPoint
from iclab.studies.sequence.model_base import ParameterDraw, SequenceModel, normal_parameters
from iclab.studies.sequence.options import MambaOptions


def sequential_scan(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a, b: (B, T, ...) -> h: (B, T, ...), one step at a time."""
    state = torch.zeros_like(b[:, 0])
    states = []
    for t in range(b.shape[1]):
        state = a[:, t] * state + b[:, t]
        states.append(state)
    return torch.stack(states, dim=1)


def parallel_scan(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a, b: (B, T, ...) -> h: (B, T, ...), in ceil(log2 T) rounds of whole-tensor products
    (differentiable: no in-place writes)."""
    length, offset = b.shape[1], 1
    while offset < length:
        b = torch.cat([b[:, :offset], a[:, offset:] * b[:, :-offset] + b[:, offset:]], dim=1)
        a = torch.cat([a[:, :offset], a[:, offset:] * a[:, :-offset]], dim=1)
        offset *= 2
    return b


def _rms(h: torch.Tensor, gain: torch.Tensor) -> torch.Tensor:
    return h * torch.rsqrt(h.square().mean(-1, keepdim=True) + 1e-6) * gain


class MambaBlock(nn.Module):
    """One selective state-space mixer with its pre-norm (module docstring)."""

    def __init__(self, options: MambaOptions, draw: ParameterDraw, dtype: torch.dtype,
                 device: torch.device) -> None:
        super().__init__()
        p, state = options.width, options.state
        kwargs: dict[str, Any] = {"dtype": dtype, "device": device}
        self.scan = options.scan
        self.norm = nn.Parameter(torch.ones(p, **kwargs))
        self.W_in, self.W_z = draw(p, p), draw(p, p)
        self.conv = draw(p, options.conv)
        self.conv_bias = nn.Parameter(torch.zeros(p, **kwargs))
        self.W_delta = draw(p, p)
        self.b_delta = nn.Parameter(torch.full((p,), math.log(math.expm1(0.05)), **kwargs))
        self.W_B, self.W_C = draw(state, p), draw(state, p)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, state + 1, **kwargs)).expand(
            p, state).clone())
        self.D = nn.Parameter(torch.ones(p, **kwargs))
        self.W_out = draw(p, p)

    def forward(self, h: torch.Tensor,
                record: Callable[[str, torch.Tensor], None] | None = None) -> torch.Tensor:
        """h: (B, T, p) -> the mixer's output: (B, T, p); ``record``, if given, receives
        ("state", the states (B, T, p * N)) and ("mixer", the output)."""
        x = _rms(h, self.norm)
        u, z = x @ self.W_in.T, x @ self.W_z.T
        length, taps = u.shape[1], self.conv.shape[1]
        padded = functional.pad(u.transpose(1, 2), (taps - 1, 0))          # (B, p, T+k-1)
        u = functional.conv1d(padded, self.conv[:, None, :].flip(-1),
                              groups=u.shape[-1]).transpose(1, 2)[:, :length]
        u = functional.silu(u + self.conv_bias)
        delta = functional.softplus(u @ self.W_delta.T + self.b_delta)     # (B, T, p)
        B, C = u @ self.W_B.T, u @ self.W_C.T                               # (B, T, N)
        A = -torch.exp(self.A_log)                                          # (p, N)
        decay = torch.exp(delta[..., None] * A)                             # (B, T, p, N)
        drive = (delta * u)[..., None] * B[:, :, None, :]
        scan = parallel_scan if self.scan == "parallel" else sequential_scan
        states = scan(decay, drive)
        out = (states * C[:, :, None, :]).sum(-1) + self.D * u
        mixed: torch.Tensor = (out * functional.silu(z)) @ self.W_out.T
        if record is not None:
            record("state", states.flatten(2))
            record("mixer", mixed)
        return mixed


class Mamba(SequenceModel):
    """Mamba-style blocks on [x_t; y_(t-1)] tokens (module docstring); trains on every
    prefix."""

    name = "mamba"
    description = ("Mamba-style selective state-space blocks (input-dependent step, B, C) on "
                   "x_t, y_(t-1) tokens, parallel or sequential scan, trained on every prefix")
    options_class = MambaOptions
    has_prefix_predictions = True
    hook_points = (
        HookPoint("resid", "(B, n+1, width)", "the residual stream after block l (resid.0: "
                  "the read-in of e_1..e_n, e_q)", first_layer=0),
        HookPoint("state", "(B, n+1, width * state)", "block l's selective state s_t at every "
                  "position, channels by state size flattened"),
        HookPoint("mixer", "(B, n+1, width)", "block l's mixer output (before the residual "
                  "sum)"),
    )

    @classmethod
    def token_width(cls, options: Any, d: int) -> int:
        return max(int(options.width * options.state), d + 1)

    @classmethod
    def parameter_count(cls, options: Any, d: int) -> int:
        p, state, taps = options.width, options.state, options.conv
        block = p + 4 * p * p + p * taps + p + p + 2 * state * p + p * state + p
        return int((d + 1) * p + p + options.layers * block + p + p + 1)

    @classmethod
    def training_defaults(cls, options: Any) -> dict[str, Any]:
        return {"batch": 128, "lr": 0.002, "steps": 3000, "warmup": 200, "clip_grad": 1.0,
                "eval_prompts": 4000}

    def __init__(self, d: int, options: MambaOptions | None = None,
                 generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        options = MambaOptions() if options is None else options
        options.check(d)
        self.options, self._d = options, d
        device, draw = normal_parameters(options.init_scale, generator, dtype)

        p = options.width
        self.read_in = draw(p, d + 1)
        self.read_in_bias = nn.Parameter(torch.zeros(p, dtype=dtype, device=device))
        self.blocks = nn.ModuleList(MambaBlock(options, draw, dtype, device)
                                    for _ in range(options.layers))
        self.norm = nn.Parameter(torch.ones(p, dtype=dtype, device=device))
        self.read_out = draw(p)
        self.read_out_bias = nn.Parameter(torch.zeros((), dtype=dtype, device=device))

    @property
    def d(self) -> int:
        return self._d

    def hook_depth(self) -> int:
        return self.options.layers

    def predict_prefixes(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n) -> (B, n): entry i predicts y_i from examples < i and
        x_i."""
        previous = torch.cat([y.new_zeros(y.shape[0], 1), y[:, :-1]], dim=1)
        tokens = torch.cat([X, previous[..., None]], dim=-1)                # (B, n, d+1)
        h = tokens @ self.read_in.T + self.read_in_bias
        self.record("resid.0", h)
        for layer, block in enumerate(self.blocks, 1):
            recorder = None if not self.recording_hooks() else (
                lambda kind, tensor, layer=layer: self.record(f"{kind}.{layer}", tensor))
            h = h + block(h, recorder)
            self.record(f"resid.{layer}", h)
        out: torch.Tensor = _rms(h, self.norm) @ self.read_out + self.read_out_bias
        return out

    def forward(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n), x_q: (B, d) -> yhat: (B,), the last prefix's prediction."""
        X_all = torch.cat([X, x_q[:, None]], dim=1)
        y_all = torch.cat([y, y.new_zeros(y.shape[0], 1)], dim=1)
        return self.predict_prefixes(X_all, y_all)[:, -1]
