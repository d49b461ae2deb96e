"""The one-layer LSA's training loss on Z statistics as one autograd node.

On a batch of ``ZStatistics`` (Z = sum_i e_i e_i^T, x_q, y_q) the one-layer LSA without the
query's own term predicts yhat = c u^T Z M x_q, with u = W_V^T h, M = (W_K^T W_Q)[:, :d] and
c = 1/n for a normalising model (1 otherwise). The mean squared error and its gradients are
computed together, in the forward, from two passes over Z:

    Zu = u^T Z: (d+1, B)         one matrix-vector product with Z viewed as (d+1, (d+1) B)
    Mx = M x_q: (d+1, B)
    r = c (Zu . Mx) - y_q,  L = |r|^2 / B,  g = 2 c r / B: (B,)
    dL/dM = (Zu * g) x_q^T,  dL/du = Z viewed (d+1, (d+1) B) times (Mx * g) viewed ((d+1) B)

and the chain to the weights is four small products. The backward only scales the stored
gradients: a training step costs a dozen tensor operations instead of the graph autograd builds
for the plain formula (``LinearSelfAttention.forward_statistics``), whose numbers this loss
reproduces (``tests/models/test_lsa_z_loss.py`` compares both, values and gradients, in
float64).
"""

from __future__ import annotations

from typing import Any

import torch

from iclab.batches import ZStatistics


class _ZStatisticsLoss(torch.autograd.Function):
    """L: () from W_K, W_Q: (k, d+1), W_V: (m, d+1), h: (m,), Z: (d+1, (d+1) B) (batch-last,
    flattened), x_t: (d, B) (the queries transposed), y_q: (B,) and the scale c."""

    @staticmethod
    def forward(
        ctx: Any,
        W_K: torch.Tensor,
        W_Q: torch.Tensor,
        W_V: torch.Tensor,
        h: torch.Tensor,
        Z: torch.Tensor,
        x_t: torch.Tensor,
        y_q: torch.Tensor,
        scale: float,
    ) -> torch.Tensor:
        d, batch = x_t.shape
        u = W_V.T @ h                                            # (d+1,)
        M = W_K.T @ W_Q[:, :d]                                   # (d+1, d)
        Mx = M @ x_t                                             # (d+1, B)
        Zu = (u @ Z).view(d + 1, batch)                          # (d+1, B): u^T Z
        residual = (Zu * Mx).sum(0).mul_(scale).sub_(y_q)       # (B,)
        loss = residual.dot(residual) / batch
        if any(ctx.needs_input_grad[:4]):
            g = residual.mul_(2.0 * scale / batch)               # dL/d(u^T Z M x_q): (B,)
            g_M = Zu.mul_(g) @ x_t.T                             # (d+1, d)
            g_u = Z @ Mx.mul_(g).view(-1)                        # (d+1,)
            g_W_Q = torch.zeros_like(W_Q)
            torch.mm(W_K, g_M, out=g_W_Q[:, :d])
            ctx.save_for_backward(W_Q[:, :d] @ g_M.T, g_W_Q, torch.outer(h, g_u), W_V @ g_u)
        return loss

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        g_W_K, g_W_Q, g_W_V, g_h = ctx.saved_tensors
        return (g_W_K * grad, g_W_Q * grad, g_W_V * grad, g_h * grad,
                None, None, None, None)


def z_statistics_loss(
    W_K: torch.Tensor,
    W_Q: torch.Tensor,
    W_V: torch.Tensor,
    h: torch.Tensor,
    stats: ZStatistics,
    scale: float = 1.0,
) -> torch.Tensor:
    """mean over the batch of (scale u^T Z M x_q - y_q)^2: a scalar, one autograd node.

    u = W_V^T h, M = (W_K^T W_Q)[:, :d] as in ``LinearSelfAttention.effective``; ``stats``'
    Z: (B, d+1, d+1) is read batch-last (a view when the sampler stored it so)."""
    dtype = W_K.dtype
    p, batch = stats.Z.shape[1], stats.batch
    Z = stats.Z.to(dtype).permute(1, 2, 0).reshape(p, p * batch)
    result: torch.Tensor = _ZStatisticsLoss.apply(  # type: ignore[no-untyped-call]
        W_K, W_Q, W_V, h, Z, stats.x_q.to(dtype).T, stats.y_q.to(dtype), float(scale)
    )
    return result
