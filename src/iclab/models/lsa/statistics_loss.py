"""The one-layer LSA's training losses on statistics, with their gradients worked out by hand.

On Z statistics (``z_loss_and_gradients``). On a batch of ``ZStatistics`` (Z = sum_i e_i e_i^T,
x_q, y_q) the one-layer LSA without the
query's own term predicts yhat = c u^T Z M x_q, with u = W_V^T h, M = (W_K^T W_Q)[:, :d] and
c = 1/n for a normalising model (1 otherwise). The mean squared error and its gradients are
computed together, in the forward, from two passes over Z:

    Zu = u^T Z: (d+1, B)         one matrix-vector product with Z viewed as (d+1, (d+1) B)
    Mx = M x_q: (d+1, B)
    r = c (Zu . Mx) - y_q,  L = |r|^2 / B,  g = 2 c r / B: (B,)
    dL/dM = (Zu * g) x_q^T,  dL/du = Z viewed (d+1, (d+1) B) times (Mx * g) viewed ((d+1) B)

and the chain to the weights is four small products: a dozen tensor operations instead of the
graph autograd builds for the plain formula (``LinearSelfAttention.forward_statistics``), used
as one autograd node or with no autograd at all (``hand_gradients``). Its numbers are the
plain formula's (the tests compare both, values and gradients, in float64).

On X^T y (``xy_loss_and_gradients``), for the model held nuisance-free. Held at u_x = 0 and m_y
= 0 (the ``lsa`` model's nuisance-free start), the one-layer LSA
predicts yhat = c u_y (X^T y)^T M_x x_q, with u_y = W_V[:, d] . h,
M_x = W_K[:, :d]^T W_Q[:, :d] and c = 1/n for a normalising model (1 otherwise). With
a = (X^T y) . (M_x x_q): (B,), the error and its gradients come together, in the forward:

    r = c u_y a - y_q,  L = |r|^2 / B,  g = 2 c r / B
    dL/du_y = g . a,  dL/dM_x = (u_y g * X^T y) x_q^T

and on to the weights through u_y and M_x only (as one autograd node or without autograd,
``iclab.models.lsa.hand_gradients``). The weights that carry u_x and m_y
(W_V[:, :d], W_K[:, d]) get a zero gradient: the model masks theirs to zero anyway
(``LinearSelfAttention.gradient_masks``), so this is the masked gradient of the loss on Z
(the tests check it against the loss on Z).
"""

from __future__ import annotations

import torch

from iclab.models.lsa.hand_gradients import Gradients, LossAndGradients, as_autograd_node
from iclab.utils.batches import GaussianStatistics, XYStatistics, ZStatistics


def z_loss_and_gradients(
    W_K: torch.Tensor, W_Q: torch.Tensor, W_V: torch.Tensor, h: torch.Tensor, Z: torch.Tensor,
    x_t: torch.Tensor, y_q: torch.Tensor, scale: float, gradients: bool = True,
) -> tuple[torch.Tensor, Gradients | None]:
    """The loss () and, if asked, its gradients (module docstring), from W_K, W_Q: (k, d+1),
    W_V: (m, d+1), h: (m,), Z: (d+1, (d+1) B) (batch-last, flattened), x_t: (d, B) (the
    queries transposed), y_q: (B,) and the scale c. Plain tensor arithmetic: call it without
    autograd recording (``torch.no_grad``) or through ``z_statistics_loss``."""
    d, batch = x_t.shape
    u = W_V.T @ h                                                # (d+1,)
    M = W_K.T @ W_Q[:, :d]                                       # (d+1, d)
    Mx = M @ x_t                                                 # (d+1, B)
    Zu = (u @ Z).view(d + 1, batch)                              # (d+1, B): u^T Z
    residual = (Zu * Mx).sum(0).mul_(scale).sub_(y_q)           # (B,)
    loss = residual.dot(residual).div_(batch)
    if not gradients:
        return loss, None
    g = residual.mul_(2.0 * scale / batch)                       # dL/d(u^T Z M x_q): (B,)
    g_M = Zu.mul_(g) @ x_t.T                                     # (d+1, d)
    g_u = Z @ Mx.mul_(g).view(-1)                                # (d+1,)
    g_W_Q = torch.nn.functional.pad(W_K @ g_M, (0, 1))           # no gradient in W_Q[:, d]
    return loss, (W_Q[:, :d] @ g_M.T, g_W_Q, torch.outer(h, g_u), W_V @ g_u)


def z_inputs(stats: ZStatistics, dtype: torch.dtype
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Z viewed batch-last (d+1, (d+1) B) (no copy where the sampler stored it so), x_q^T, y_q."""
    p, batch = stats.Z.shape[1], stats.batch
    Z = stats.Z.to(dtype).permute(1, 2, 0).reshape(p, p * batch)
    return Z, stats.x_q.to(dtype).T, stats.y_q.to(dtype)


def z_statistics_loss(
    W_K: torch.Tensor,
    W_Q: torch.Tensor,
    W_V: torch.Tensor,
    h: torch.Tensor,
    stats: ZStatistics,
    scale: float = 1.0,
) -> torch.Tensor:
    """mean over the batch of (scale u^T Z M x_q - y_q)^2: a scalar, one autograd
    node (``iclab.models.lsa.hand_gradients``)."""
    return as_autograd_node(z_loss_and_gradients, (W_K, W_Q, W_V, h),
                            *z_inputs(stats, W_K.dtype), float(scale))


def xy_loss_and_gradients(
    W_K: torch.Tensor, W_Q: torch.Tensor, W_V: torch.Tensor, h: torch.Tensor,
    xy_t: torch.Tensor, x_t: torch.Tensor, y_q: torch.Tensor, scale: float,
    gradients: bool = True,
) -> tuple[torch.Tensor, Gradients | None]:
    """The loss () and, if asked, its gradients (module docstring), from W_K, W_Q: (k, d+1),
    W_V: (m, d+1), h: (m,), xy_t, x_t: (d, B) (X^T y and the queries, transposed), y_q: (B,)
    and the scale c. Plain tensor arithmetic: call it without autograd recording
    (``torch.no_grad``) or through ``xy_statistics_loss``."""
    d, batch = x_t.shape
    value, key, query = W_V[:, d], W_K[:, :d], W_Q[:, :d]
    u_y = value @ h                                              # ()
    a = (xy_t * ((key.T @ query) @ x_t)).sum(0)                  # (B,): (X^T y) . M_x x_q
    residual = (a * (u_y * scale)).sub_(y_q)                     # (B,)
    loss = residual.dot(residual).div_(batch)
    if not gradients:
        return loss, None
    g = residual.mul_(2.0 * scale / batch)                       # dL/d(u^T Z M x_q)
    g_uy = g.dot(a)
    g_M = torch.mm(xy_t * g, x_t.T).mul_(u_y)                    # dL/dM_x: (d, d)
    pad = torch.nn.functional.pad                                # zero u_x and m_y columns
    return loss, (pad(query @ g_M.T, (0, 1)), pad(key @ g_M, (0, 1)),
                  pad(torch.outer(h, g_uy[None]), (d, 0)), value * g_uy)


def xy_inputs(stats: XYStatistics, dtype: torch.dtype
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """X^T y and x_q transposed to (d, B) (views of the sampler's batch-last tensors), y_q."""
    return stats.xy.to(dtype).T, stats.x_q.to(dtype).T, stats.y_q.to(dtype)


def xy_statistics_loss(
    W_K: torch.Tensor,
    W_Q: torch.Tensor,
    W_V: torch.Tensor,
    h: torch.Tensor,
    stats: XYStatistics,
    scale: float = 1.0,
) -> torch.Tensor:
    """mean over the batch of (scale u_y (X^T y)^T M_x x_q - y_q)^2: a scalar, one autograd
    node (``iclab.models.lsa.hand_gradients``)."""
    return as_autograd_node(xy_loss_and_gradients, (W_K, W_Q, W_V, h),
                            *xy_inputs(stats, W_K.dtype), float(scale))


def hand_worked_loss(
    stats: GaussianStatistics | ZStatistics | XYStatistics, dtype: torch.dtype,
    normalise: bool, attend_query: bool,
) -> tuple[LossAndGradients, tuple[object, ...]] | None:
    """The loss-and-gradients function for these statistics and its data after the weights
    (``iclab.models.lsa.hand_gradients``), or None where autograd is left to the model:
    ``XYStatistics`` (the caller checks the model is held nuisance-free), ``ZStatistics``
    without the query's own term."""
    scale = 1.0 / stats.n if normalise else 1.0
    if isinstance(stats, XYStatistics):
        return xy_loss_and_gradients, (*xy_inputs(stats, dtype), scale)
    if isinstance(stats, ZStatistics) and not attend_query:
        return z_loss_and_gradients, (*z_inputs(stats, dtype), scale)
    return None
