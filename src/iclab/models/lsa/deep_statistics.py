"""The L-layer LSA's prediction from Z = sum_i e_i e_i^T, with a hand-written backward.

Layer l multiplies every token by T_l = I + P_l G_l Q_l / n (P_l = W_PV^(l), Q_l = W_KQ^(l),
G_1 = Z), so G_(l+1) = T_l G_l T_l^T and the query token after L layers is
T_L ... T_1 e_q, e_q = [x_q; 0]; the prediction is minus its last coordinate
(``iclab.models.lsa.deep``). Only that coordinate is needed, so the last layer is done with
vectors: with v = T_(L-1) ... T_1 e_q, T = T_(L-1), G = G_(L-1) and p_L the last row of P_L,

    yhat = -(v_last + (T^T p_L)^T G (T^T Q_L v) / n),

and G_L is never formed: L = 2 needs no product of two per-prompt matrices at all, L = 3
needs two in the forward and one in the backward (no gradient flows to Z or x_q).

Per-prompt matrices are held batch-last, (d+1, d+1, B), and per-prompt vectors (d+1, B): a
shared weight times every prompt's matrix is then one wide GEMM, a matrix-vector product is
one multiply and one reduction over an outer axis, and a product of two per-prompt matrices
is d+1 fused multiply-adds on (d+1, d+1, B) tensors (several times faster than ``torch.bmm``
on 11 x 11 matrices here). ``tests/models/lsa/test_deep_statistics.py`` checks values and
gradients against autograd of the plain recursion, in float64.
"""

from __future__ import annotations

from typing import Any

import torch

Tensor = torch.Tensor


def _mv(A: Tensor, x: Tensor) -> Tensor:
    """A x per prompt: A (p, p, B), x (p, B) -> (p, B), without a (p, p, B) temporary."""
    out = A[:, 0] * x[0]
    for j in range(1, A.shape[1]):
        out.addcmul_(A[:, j], x[j])
    return out


def _mv_t(A: Tensor, x: Tensor) -> Tensor:
    """A^T x per prompt: A (p, p, B), x (p, B) -> (p, B), without a (p, p, B) temporary."""
    out = A[0] * x[0]
    for j in range(1, A.shape[0]):
        out.addcmul_(A[j], x[j])
    return out


def _outer(a: Tensor, b: Tensor) -> Tensor:
    """a b^T per prompt: a, b (p, B) -> (p, p, B)."""
    return a[:, None] * b[None]


def _mm(A: Tensor, C: Tensor) -> Tensor:
    """A C per prompt: A, C (p, p, B) -> (p, p, B)."""
    out = A[:, 0, None] * C[None, 0]
    for j in range(1, A.shape[1]):
        out.addcmul_(A[:, j, None], C[None, j])
    return out


def _mm_nt(A: Tensor, C: Tensor) -> Tensor:
    """A C^T per prompt: A, C (p, p, B) -> (p, p, B)."""
    out = A[:, 0, None] * C[None, :, 0]
    for j in range(1, A.shape[1]):
        out.addcmul_(A[:, j, None], C[None, :, j])
    return out


def _mm_tn(A: Tensor, C: Tensor) -> Tensor:
    """A^T C per prompt: A, C (p, p, B) -> (p, p, B)."""
    out = A[0, :, None] * C[None, 0]
    for j in range(1, A.shape[0]):
        out.addcmul_(A[j, :, None], C[None, j])
    return out


def _left(W: Tensor, A: Tensor) -> Tensor:
    """W A for one shared W (p, p) and every prompt's A (p, p, B): one GEMM."""
    p, _, batch = A.shape
    return (W @ A.reshape(p, p * batch)).view(p, p, batch)


def _right(A: Tensor, W: Tensor) -> Tensor:
    """A W for every prompt's A (p, p, B) and one shared W (p, p): p GEMMs W^T A[i]."""
    p = A.shape[0]
    return torch.bmm(W.T.expand(p, p, p), A)


class _DeepStatisticsPrediction(torch.autograd.Function):
    """yhat: (B,) from P, Q: (L, p, p), Z: (p, p, B) batch-last, e_q: (p, B), n."""

    @staticmethod
    def forward(ctx: Any, P: Tensor, Q: Tensor, Z: Tensor, e_q: Tensor, n: int) -> Tensor:
        layers, p = P.shape[0], P.shape[1]
        G, v, T = Z, e_q, None
        saved: list[tuple[Tensor, ...]] = []
        for layer in range(layers - 1):
            T = _left(P[layer] / n, _right(G, Q[layer]))
            T.diagonal(0, 0, 1).add_(1.0)                       # I + P G Q / n
            v_next = _mv(T, v)
            if layer < layers - 2:
                TG = _mm(T, G)
                saved.append((G, T, v, TG))
                G = _mm_nt(TG, T)                               # T G T^T
            else:
                saved.append((G, T, v))
            v = v_next
        r = Q[-1] @ v                                           # (p, B)
        p_last = P[-1, p - 1]                                   # (p,)
        if T is None:
            a, b = r, p_last[:, None].expand_as(r)
        else:
            a = _mv_t(T, r)
            b = (p_last @ T.reshape(p, -1)).view(p, -1)         # T^T p_L
        Ga = _mv(G, a)
        c = (b * Ga).sum(0)
        yhat = -(v[p - 1] + c / n)
        ctx.save_for_backward(P, Q, G, v, r, a, b, Ga)
        ctx.layers_saved = saved
        ctx.n = n
        return yhat

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        P, Q, G, v, r, a, b, Ga = ctx.saved_tensors
        saved: list[tuple[Tensor, ...]] = ctx.layers_saved
        n: int = ctx.n
        layers, p = P.shape[0], P.shape[1]
        dP, dQ = torch.zeros_like(P), torch.zeros_like(Q)
        dc = grad / -n
        dv = torch.zeros_like(v)
        dv[p - 1] = -grad
        db = Ga * dc
        da = _mv(G, b).mul_(dc)
        if not saved:
            dr = da
            dP[-1, p - 1] = db.sum(1)
        else:
            T = saved[-1][1]
            dr = _mv(T, da)
            dP[-1, p - 1] = T.reshape(p, -1) @ db.reshape(-1)
        dQ[-1] = dr @ v.T
        dv += Q[-1].T @ dr
        dG_next: Tensor | None = None                           # d loss / d G_(layer+1)
        for layer in range(layers - 2, -1, -1):
            G_l, T, v_in = saved[layer][:3]
            dT = _outer(dv, v_in)                               # from v_(l+1) = T v_l
            if layer == layers - 2:                             # from a = T^T r, b = T^T p_L
                dT.addcmul_(r[:, None], da[None])
                dT.addcmul_(P[-1, p - 1][:, None, None], db[None])
            if dG_next is not None:
                S = dG_next + dG_next.transpose(0, 1)           # 2 sym(dG_(layer+1))
                dT += _mm(S, saved[layer][3])                   # 2 sym(dG) T G
            dv = _mv_t(T, dv)
            dT_Qt = _right(dT, Q[layer].T / n)                  # dT Q^T / n
            dP[layer] = dT_Qt.reshape(p, -1) @ G_l.reshape(p, -1).T
            Pt_dT = _left(P[layer].T / n, dT)                   # P^T dT / n
            dQ[layer] = torch.bmm(G_l, Pt_dT.transpose(1, 2)).sum(0)   # G P^T dT / n
            if layer == 0:
                break
            dG = _left(P[layer].T, dT_Qt)                       # P^T dT Q^T / n
            if layer == layers - 2:                             # from c = b^T G a
                dG.addcmul_(b[:, None], (a * dc)[None])
            if dG_next is not None:
                dG += _mm_tn(T, _mm(S, T)).mul_(0.5)           # T^T sym(dG) T
            dG_next = dG
        return dP, dQ, None, None, None


def deep_statistics_prediction(P: Tensor, Q: Tensor, Z: Tensor, x_q: Tensor, n: int) -> Tensor:
    """-(T_L ... T_1 e_q)_last for every prompt: yhat (B,).

    P, Q: (L, d+1, d+1) the layers' W_PV and W_KQ; Z: (B, d+1, d+1) sum_i e_i e_i^T (fastest
    when it is a view of a batch-last (d+1, d+1, B) tensor, as ``iclab.tasks.wishart`` draws
    it); x_q: (B, d); n: the number of context tokens (the 1/n of every layer).
    Differentiable in P and Q only.
    """
    batch, d = x_q.shape
    e_q = torch.zeros(d + 1, batch, dtype=x_q.dtype, device=x_q.device)
    e_q[:d] = x_q.T
    result: Tensor = _DeepStatisticsPrediction.apply(  # type: ignore[no-untyped-call]
        P, Q, Z.permute(1, 2, 0).contiguous(), e_q, int(n),
    )
    return result
