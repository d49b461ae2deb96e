"""One-layer LSA's prediction on whole prompts, with a hand-written backward.

The prediction is yhat = sum_i a_i b_i with a_i = u.e_i and b_i = e_i.(M x_q), e_i = [x_i; y_i],
u = W_V^T h, M = (W_K^T W_Q)[:, :d] (``iclab.models.lsa.layer``). Its gradient needs only two more
sums over the prompt,

    dL/du = sum_b g_b sum_i b_i e_i,     dL/d(M x_q)_b = g_b sum_i a_i e_i,

with g = dL/dyhat, and the parameters' gradients follow from dL/du and
dL/dM = sum_b dL/d(M x_q)_b x_q^T by the chain rule through u and M.

Per-prompt quantities are held with the batch axis innermost, X as (d, n, B) and y as (n, B),
so that every product runs along contiguous memory and every sum over d or n adds whole
rows: the prompt samplers of the nonlinear and covariate-law families draw in that layout
(``iclab.tasks.nonlinear``, the covariates study's ``linear_law``) and hand out (B, n, d) views
of it;
other prompts are transposed once. The whole map from (W_K, W_Q, W_V, h) to yhat is one
autograd node: about twenty tensor operations for the forward and backward together, instead
of autograd's graph of about forty on batch-major tensors. ``tests/models/lsa/test_prompts.py``
checks values and gradients against autograd of the plain formula, in float64.
"""

from __future__ import annotations

from typing import Any

import torch


def batch_inner(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` with its axes reversed, copied only if the batch axis (now last) is not
    contiguous: (B, n, d) -> (d, n, B), (B, n) -> (n, B), (B, d) -> (d, B)."""
    reversed_axes = tensor.permute(*range(tensor.dim() - 1, -1, -1))
    return reversed_axes if reversed_axes.stride(-1) == 1 else reversed_axes.contiguous()


class _PromptsPrediction(torch.autograd.Function):
    """yhat: (B,) from W_K, W_Q: (k, d+1), W_V: (m, d+1), h: (m,) and a batch of prompts held
    batch-innermost: X_t (d, n, B), y_t (n, B), x_t (d, B)."""

    @staticmethod
    def forward(
        ctx: Any,
        W_K: torch.Tensor,
        W_Q: torch.Tensor,
        W_V: torch.Tensor,
        h: torch.Tensor,
        X_t: torch.Tensor,
        y_t: torch.Tensor,
        x_t: torch.Tensor,
    ) -> torch.Tensor:
        d = x_t.shape[0]
        u = W_V.T @ h                                            # (d+1,)
        M = W_K.T @ W_Q[:, :d]                                   # (d+1, d)
        Mx = M @ x_t                                             # (d+1, B)
        a: torch.Tensor = torch.tensordot(u[:d], X_t, dims=1)   # (n, B)
        a.add_(y_t, alpha=float(u[d]))
        b = (X_t * Mx[:d, None, :]).sum(0).addcmul_(y_t, Mx[d])  # (n, B)
        yhat = (a * b).sum(0)                                    # (B,)
        ctx.save_for_backward(W_K, W_Q, W_V, h, X_t, y_t, x_t, a, b)
        return yhat

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        W_K, W_Q, W_V, h, X_t, y_t, x_t, a, b = ctx.saved_tensors
        d = x_t.shape[0]
        g_b = b * grad                                           # dL/da: (n, B)
        g_a = a * grad                                           # dL/db: (n, B)
        g_u = torch.empty(d + 1, dtype=grad.dtype, device=grad.device)
        torch.tensordot(X_t, g_b, dims=2, out=g_u[:d])
        g_u[d] = (y_t * g_b).sum()
        g_Mx = torch.empty(d + 1, x_t.shape[1], dtype=grad.dtype, device=grad.device)
        torch.sum(X_t * g_a, dim=1, out=g_Mx[:d])                # (d, B)
        torch.sum(y_t * g_a, dim=0, out=g_Mx[d])
        g_M = g_Mx @ x_t.T                                       # (d+1, d)
        g_W_Q = torch.zeros_like(W_Q)
        torch.mm(W_K, g_M, out=g_W_Q[:, :d])
        return (W_Q[:, :d] @ g_M.T, g_W_Q, torch.outer(h, g_u), W_V @ g_u, None, None, None)


def prompts_prediction(
    W_K: torch.Tensor,
    W_Q: torch.Tensor,
    W_V: torch.Tensor,
    h: torch.Tensor,
    X: torch.Tensor,
    y: torch.Tensor,
    x_q: torch.Tensor,
) -> torch.Tensor:
    """u^T Z M x_q on the prompts X (B, n, d), y (B, n), x_q (B, d) (no 1/n, no query term):
    (B,). Gradients flow to the four weights only, not to the prompts."""
    result: torch.Tensor = _PromptsPrediction.apply(  # type: ignore[no-untyped-call]
        W_K, W_Q, W_V, h, batch_inner(X), batch_inner(y), batch_inner(x_q))
    return result
