"""The linear recurrence h_t = a_t * h_(t-1) + b_t (h_0 = 0) along axis 1, two ways: the
sequential reference and a parallel scan (Hillis and Steele: log2(T) rounds, each combining
every position with the one 2^k before it, (a, b) o (a', b') = (a a', a' b + b'))."""

from __future__ import annotations

import torch


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
