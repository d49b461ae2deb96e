"""The hook points of the ``lsa`` models (``iclab.models.hooks``) and the attention outputs
that only a recorder asks for (the forwards below never form them to predict).

Tokens e_i = [x_i; y_i] and e_q = [x_q; 0]; ``resid.0`` is (e_1, ..., e_n, e_q): (B, n+1,
d+1), the query last.

- one layer (``LinearSelfAttention``): ``attn.1`` (B, 1, m), the attention output at the
  query W_V sum_i e_i (W_K e_i . W_Q e_q) (the query's own term with ``attend_query``, over n
  with ``normalise``), whose product with h is the prediction;
- H heads (``MultiHeadLinearAttention``): ``attn.1`` (B, 1, H), each head's output
  y^T X W_h x_q (over n with ``normalise``), whose product with v is the prediction;
- L layers (``DeepLinearSelfAttention``): ``resid.l`` (B, n+1, d+1), every token after
  layer l (the prediction is minus the query's last coordinate of ``resid.L``), and
  ``attn.l`` (B, n+1, d+1), layer l's update of every token.
"""

from __future__ import annotations

from typing import Any

import torch

from iclab.models.hooks import HookPoint

ONE_LAYER = (
    HookPoint("resid.0", "(B, n+1, d+1)", "the tokens e_1..e_n, e_q entering the layer",
              per_layer=False),
    HookPoint("attn.1", "(B, 1, m)", "the attention output at the query before the "
              "read-out h (h . attn.1 is the prediction)", per_layer=False),
)

HEADS = (
    HookPoint("resid.0", "(B, n+1, d+1)", "the tokens e_1..e_n, e_q entering the layer",
              per_layer=False),
    HookPoint("attn.1", "(B, 1, H)", "each head's output y^T X W_h x_q at the query (v . "
              "attn.1 is the prediction)", per_layer=False),
)

DEEP = (
    HookPoint("resid", "(B, n+1, d+1)", "every token after layer l (resid.0: e_1..e_n, e_q; "
              "the prediction is -resid.L[:, -1, d])", first_layer=0),
    HookPoint("attn", "(B, n+1, d+1)", "layer l's update of every token"),
)


def prompt_stream(X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
    """(e_1, ..., e_n, e_q): (B, n+1, d+1)."""
    context = torch.cat([X, y[..., None]], dim=-1)
    query = torch.cat([x_q, x_q.new_zeros(x_q.shape[0], 1)], dim=-1)
    return torch.cat([context, query[:, None]], dim=1)


def record_one_layer(model: Any, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> None:
    """Record the one-layer model's ``resid.0`` and ``attn.1``."""
    stream = prompt_stream(X, y, x_q)
    model.record("resid.0", stream)
    model.record("attn.1", one_layer_attention(model.W_K, model.W_Q, model.W_V, stream,
                                               model.options.attend_query,
                                               model.options.normalise))


def one_layer_attention(W_K: torch.Tensor, W_Q: torch.Tensor, W_V: torch.Tensor,
                        stream: torch.Tensor, attend_query: bool,
                        normalise: bool) -> torch.Tensor:
    """The one-layer attention output at the query: (B, 1, m)."""
    keys_from = stream if attend_query else stream[:, :-1]
    scores = keys_from @ W_K.T @ (W_Q @ stream[:, -1, :, None])             # (B, T', 1)
    output = ((keys_from @ W_V.T) * scores).sum(1)                          # (B, m)
    if normalise:
        output = output / (stream.shape[1] - 1)
    return output[:, None]


def head_outputs(xy: torch.Tensor, x_q: torch.Tensor, W: torch.Tensor | None,
                 K: torch.Tensor | None, Q: torch.Tensor | None, n: int,
                 normalise: bool) -> torch.Tensor:
    """Each head's output (x_q^T W_h^T X^T y, or sum_r (Q_hr . x_q)(K_hr . X^T y)): (B, 1,
    H)."""
    if W is not None:
        outputs = torch.einsum("hij,bj,bi->bh", W, x_q, xy)
    else:
        assert K is not None and Q is not None
        outputs = torch.einsum("hrd,bd,hre,be->bh", Q, x_q, K, xy)
    if normalise:
        outputs = outputs / n
    return outputs[:, None]
