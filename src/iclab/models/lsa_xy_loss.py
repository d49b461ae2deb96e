"""The nuisance-free one-layer LSA's training loss on (X^T y, x_q, y_q), gradients by hand.

Held at u_x = 0 and m_y = 0 (the ``lsa`` model's nuisance-free start), the one-layer LSA
predicts yhat = c u_y (X^T y)^T M_x x_q, with u_y = W_V[:, d] . h,
M_x = W_K[:, :d]^T W_Q[:, :d] and c = 1/n for a normalising model (1 otherwise). With
a = (X^T y) . (M_x x_q): (B,), the error and its gradients come together, in the forward:

    r = c u_y a - y_q,  L = |r|^2 / B,  g = 2 c r / B
    dL/du_y = g . a,  dL/dM_x = (u_y g * X^T y) x_q^T

and on to the weights through u_y and M_x only (as one autograd node or without autograd,
``iclab.models.hand_gradients``). The weights that carry u_x and m_y
(W_V[:, :d], W_K[:, d]) get a zero gradient: the model masks theirs to zero anyway
(``LinearSelfAttention.gradient_masks``), so this is the masked gradient of the loss on Z
(``tests/models/test_lsa_xy_loss.py`` checks it against ``iclab.models.lsa_z_loss``).
"""

from __future__ import annotations

import torch

from iclab.batches import XYStatistics
from iclab.models.hand_gradients import Gradients, as_autograd_node


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
    node (``iclab.models.hand_gradients``)."""
    return as_autograd_node(xy_loss_and_gradients, (W_K, W_Q, W_V, h),
                            *xy_inputs(stats, W_K.dtype), float(scale))
