"""L layers of linear self-attention with a residual stream (docs/theory.md section 10).

Tokens e_i = [x_i; y_i] (i = 1..n) and the query token e_q = [x_q; 0], all in R^(d+1). Layer l
(weights W_PV^(l), W_KQ^(l): (d+1, d+1)) updates every token, the query included,

    e_j <- e_j + (1/n) W_PV^(l) Z^(l) W_KQ^(l) e_j,      Z^(l) = sum_{i <= n} e_i e_i^T,

the sum over the n context tokens at that layer. So every token is multiplied by the same
T_l = I + W_PV^(l) Z^(l) W_KQ^(l) / n, Z^(l+1) = T_l Z^(l) T_l^T, and the prediction depends
on the prompt only through Z = Z^(1) and x_q (``forward_z``, ``forward_statistics``).

This is the ``lsa`` model with ``layers`` > 1, or with ``parameterisation = "sparse"`` or
``looped`` (``iclab.models.lsa.LinearSelfAttention.create`` builds it); ``layers = 1`` full
stays the original one-layer model.

**Sign convention.** The prediction is minus the query token's last coordinate after the L
layers, yhat = -(T_L ... T_1 e_q)_(d+1) (Ahn et al.'s read-out). Reason: every token goes
through the same map, so the query's label slot, 0, evolves as a context label would; in a
model that runs GD the label slot of token j holds the residual y_j - w_l^T x_j, which for the
query (label 0) is -x_q^T w_l.

**Sparse parameterisation** (Ahn et al.): W_KQ^(l) = [[B_l, 0], [0, 0]] (B_l: (d, d) free) and
W_PV^(l) = [[0, 0], [0, p_l]] (p_l: a free scalar; Ahn et al. fix it, here it is free and only
rescales A_l). Then the x coordinates never change, and with y_j^(l) = y_j - w_l^T x_j for the
context and -w_l^T x_q for the query, layer l adds (p_l / n) x_j^T B_l^T X^T r to every label
slot (r: the context residuals), that is

    w_(l+1) = w_l + A_l X^T (y - X w_l) / n,     A_l = -p_l B_l^T,     w_0 = 0,

exactly: L steps of GD preconditioned by A_1, ..., A_L on 1/2 sum_i (y_i - w^T x_i)^2 / n, and
yhat = x_q^T w_L. ``layer_preconditioners`` reads the A_l off; ``sparse_gd_model`` builds the
model of given A_l (or step sizes eta_l, A_l = eta_l I). The other entries of W_PV's label row
would add a drift -p B_l^T X^T X v / n that does not depend on y and break the GD form, so they
are not free. ``looped``: one set of weights applied L times.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from iclab.models.base import Model
from iclab.models.lsa import activations
from iclab.models.lsa.deep_statistics import deep_statistics_prediction
from iclab.models.lsa.options import LSAOptions
from iclab.utils.batches import ZStatistics
from iclab.utils.errors import ConfigError


class DeepLinearSelfAttention(Model):
    """L-layer linear self-attention read out at the query token (module docstring).

    Built like the one layer, ``DeepLinearSelfAttention(d, options, generator, dtype)``, from
    the model's one options class ``LSAOptions`` (``layers``, ``parameterisation``,
    ``looped``, ``init``, ``init_scale``; the one-layer fields at their defaults).

    Parameters, each with a leading axis of length 1 (looped) or L:
    full: W_PV, W_KQ (., d+1, d+1); sparse: B (., d, d) the x-block of W_KQ, p (.,) the label
    entry of W_PV. Initialisation, s = init_scale, every random number from ``generator``:

    - ``init = "gd-subspace"`` (the default): every layer a noisy GD step of size s:
      B_l = s (I + N_l), p_l = -1 + s n_l (N_l, n_l standard normal), every other weight of a
      full model 0, so the blocks coupling x and y in W_PV and W_KQ start at 0. That set
      (W = D W D, D = diag(1, .., 1, -1)) is mapped to itself by (w, noise) -> (-w, -noise),
      so gradient flow on the population loss keeps it, and it holds GD and GD++. Random
      starts of full models at depth end in poor stationary points on some seeds
      (benchmarks/README.md); this one does not;
    - ``init = "random"``: every free weight N(0, s^2).
    """

    name = "lsa"
    description = "L layers of linear self-attention with a residual stream"
    options_class = LSAOptions
    hook_points = activations.DEEP
    has_statistics = True
    statistics_kind = "wishart"

    def __init__(
        self,
        d: int,
        options: LSAOptions | None = None,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        """L layers for dimension d of ``options`` (default ``LSAOptions()``: one full
        layer), seeded."""
        super().__init__()
        options = LSAOptions() if options is None else options
        options.check_stack(d)
        self.options = options
        self._d = d
        init_scale = options.init_scale
        p, stored = d + 1, options.stored_layers
        device = generator.device if generator is not None else torch.device("cpu")

        def normal(*shape: int) -> torch.Tensor:
            values = torch.randn(*shape, generator=generator, dtype=dtype, device=device)
            return init_scale * values

        def draw(*shape: int) -> nn.Parameter:
            return nn.Parameter(normal(*shape))

        self.sparse = options.parameterisation == "sparse"
        if options.init == "gd-subspace":
            B = normal(stored, d, d) + init_scale * torch.eye(d, dtype=dtype, device=device)
            pv = normal(stored) - 1.0
            if self.sparse:
                self.B, self.p = nn.Parameter(B), nn.Parameter(pv)
            else:
                self.W_KQ = nn.Parameter(nn.functional.pad(B, (0, 1, 0, 1)))
                self.W_PV = nn.Parameter(nn.functional.pad(pv[:, None, None], (d, 0, d, 0)))
        elif self.sparse:
            self.B = draw(stored, d, d)
            self.p = draw(stored)
        else:
            self.W_PV = draw(stored, p, p)
            self.W_KQ = draw(stored, p, p)

    @property
    def d(self) -> int:
        return self._d

    @property
    def layers(self) -> int:
        return self.options.layers

    def weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(W_PV, W_KQ): (L, d+1, d+1) each, layer by layer (the same matrices when looped)."""
        if self.sparse:
            W_KQ = nn.functional.pad(self.B, (0, 1, 0, 1))              # [[B_l, 0], [0, 0]]
            W_PV = nn.functional.pad(self.p[:, None, None], (self.d, 0, self.d, 0))
        else:
            W_PV, W_KQ = self.W_PV, self.W_KQ
        if self.options.looped:
            shape = (self.layers, self.d + 1, self.d + 1)
            W_PV, W_KQ = W_PV.expand(shape), W_KQ.expand(shape)
        return W_PV, W_KQ

    def forward(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n), x_q: (B, d) -> yhat: (B,), token by token."""
        n = X.shape[1]
        tokens = torch.cat([X, y[..., None]], -1)                         # (B, n, d+1)
        query = torch.cat([x_q, torch.zeros_like(x_q[:, :1])], -1)        # (B, d+1)
        self._record_stream("resid.0", tokens, query)
        for layer, (W_PV, W_KQ) in enumerate(zip(*self.weights(), strict=True), 1):
            Z = tokens.transpose(1, 2) @ tokens                           # (B, d+1, d+1)
            update = W_PV @ Z @ W_KQ / n                                  # (B, d+1, d+1)
            token_update = tokens @ update.transpose(1, 2)
            query_update = (update @ query[..., None]).squeeze(-1)
            self._record_stream(f"attn.{layer}", token_update, query_update)
            tokens = tokens + token_update
            query = query + query_update
            self._record_stream(f"resid.{layer}", tokens, query)
        return -query[:, self.d]

    def hook_depth(self) -> int:
        return self.layers

    def _record_stream(self, name: str, tokens: torch.Tensor, query: torch.Tensor) -> None:
        """Record (tokens, query) as one (B, n+1, d+1) hook tensor while recording."""
        if self.recording_hooks():
            self.record(name, torch.cat([tokens, query[:, None]], dim=1))

    def forward_z(self, Z: torch.Tensor, x_q: torch.Tensor, n: int) -> torch.Tensor:
        """The same prediction from Z: (B, d+1, d+1) = sum_i e_i e_i^T, x_q: (B, d) and n:
        yhat (B,). Cost independent of n (``iclab.models.lsa.deep_statistics``)."""
        W_PV, W_KQ = self.weights()
        return deep_statistics_prediction(W_PV, W_KQ, Z, x_q, n)

    def forward_statistics(self, stats: ZStatistics) -> torch.Tensor:
        """The prediction on statistics drawn by ``sample_z_statistics``: (B,)."""
        return self.forward_z(stats.Z, stats.x_q, stats.n)

    @property
    def is_sparse(self) -> bool:
        return self.sparse

    def layer_preconditioners(self) -> torch.Tensor:
        """A_l = -p_l B_l^T: (L, d, d), so that layer l is w_(l+1) = w_l + A_l X^T (y - X w_l)/n.

        Sparse parameterisation only (a full model's layers are not GD steps in general).
        """
        if not self.sparse:
            raise ConfigError("layer preconditioners are defined for the sparse "
                              "parameterisation only; this model is full")
        A = -self.p[:, None, None] * self.B.transpose(1, 2)
        return A.expand(self.layers, self.d, self.d) if self.options.looped else A


def sparse_gd_model(
    steps: Sequence[float] | torch.Tensor,
    d: int | None = None,
    dtype: torch.dtype = torch.float64,
    looped: bool = False,
) -> DeepLinearSelfAttention:
    """The sparse model of L preconditioned GD steps from w_0 = 0.

    ``steps``: L step sizes eta_l (A_l = eta_l I, then ``d`` is required) or a (L, d, d) tensor
    of preconditioners A_l. Weights: B_l = A_l^T, p_l = -1. ``looped`` needs all A_l equal.
    """
    if isinstance(steps, torch.Tensor) and steps.dim() == 3:
        A = steps.to(dtype)
    else:
        if d is None:
            raise ConfigError("sparse_gd_model needs d when given step sizes")
        etas = torch.as_tensor(steps, dtype=dtype).reshape(-1)
        A = etas[:, None, None] * torch.eye(d, dtype=dtype)
    layers, d = A.shape[0], A.shape[1]
    if A.shape != (layers, d, d) or layers < 1:
        raise ConfigError(f"preconditioners must be (L, d, d) with L >= 1, got {tuple(A.shape)}")
    if looped and not torch.equal(A, A[:1].expand_as(A)):
        raise ConfigError("a looped model needs the same preconditioner at every layer")
    options = LSAOptions(layers=layers, parameterisation="sparse", looped=looped)
    model = DeepLinearSelfAttention(d, options, dtype=dtype)
    stored = model.options.stored_layers
    with torch.no_grad():
        model.B.copy_(A[:stored].transpose(1, 2))
        model.p.fill_(-1.0)
    return model


DEEP_TRAINING = {"steps": 500, "batch": 4096, "lr": 0.02, "clip_grad": 1.0}
"""Optimiser defaults of the L-layer model (benchmarks/README.md, the depth study): at lr 0.005
the sparse layers stay at their common start, a saddle of the L-step GD loss, and L = 4 stalls;
rare prompts' gradients reach norms of 1e12."""
FULL_DEEP_WARMUP = 50
"""Warm-up steps of the full L-layer model: Adam's first steps, about lr for every weight, threw
a rare prompt past float32 (L = 4, seed 2); on the sparse model it delays the layers' split."""
