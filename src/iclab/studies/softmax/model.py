"""One layer of softmax attention read out at the query token.

Tokens e_i = [x_i; y_i] in R^{d+1} for the n context examples, the query token e_q = [x_q; 0].
Each of the H heads h has a key and a query matrix W_K^h, W_Q^h: (k, d+1) (k = ``key_dim``
per head) and a value matrix W_V^h: (d+1, d+1) mapping a token back into token space (the
combined value-output matrix of Zhang, Frei and Bartlett, and of von Oswald et al.). The query
token attends to the context tokens only, through a softmax over i = 1..n:

    a^h_i = softmax_i( (W_K^h e_i) . (W_Q^h e_q) / sqrt(k) ),
    t     = e_q + sum_h W_V^h sum_i a^h_i e_i                   (residual stream, (d+1,)),
    t     = t + W_2 relu(W_1 t + b_1) + b_2                    (only when mlp_width m > 0),
    yhat  = t[d]                                               (the query's label slot).

No biases in the attention (the MLP has them). Without the MLP yhat depends on W_V^h only
through its last row v^h: yhat = sum_h sum_i a^h_i v^h . e_i, a sum over heads of convex
combinations of the examples' values. One head therefore always carries the kernel-smoother
term sum_i a_i v.e_i, whose part at small logits, v . mean_i e_i, no weight can cancel; a
second head with uniform attention can cancel it, after which small logits give the linear
attention x_q^T Gamma X^T y / n of docs/theory.md section 2 to first order.

Initialisation: every attention and MLP weight N(0, init_scale^2) from the given generator,
MLP biases 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from iclab.models.base import Model
from iclab.models.hooks import HookPoint
from iclab.utils.errors import ConfigError
from iclab.utils.fields import setting


def _positive_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


@dataclass(frozen=True)
class SoftmaxModelOptions:
    """The options of the ``softmax`` model (``iclab train --model softmax``), declared once.

    Two heads by default: one head alone always carries a kernel-smoother mean term that no
    weight can cancel (module docstring), and plateaus far above the linear optimum (d = 5,
    n = 20, sigma = 0.5: test loss 2.45 for one head, 1.49 for two, L* = 1.44).
    """

    key_dim: int | None = setting(None, "Key/query width per head [default: d+1].", minimum=1,
                                  maximum=100_000)
    heads: int = setting(2, "Attention heads (softmax model).", minimum=1, maximum=1024)
    mlp_width: int = setting(0, "Hidden width of the MLP after attention (0: no MLP).",
                             minimum=0, maximum=100_000)
    init_scale: float = setting(0.1, "Standard deviation of the initial weights.", minimum=0,
                                maximum=1e6, strict=True)

    def check(self, d: int) -> None:
        """ConfigError (one line) unless these options build a model for dimension d: d,
        key_dim (when set) and heads integers >= 1, mlp_width >= 0, init_scale finite > 0."""
        _positive_int("d", d, 1)
        if self.key_dim is not None:
            _positive_int("key_dim", self.key_dim, 1)
        _positive_int("heads", self.heads, 1)
        _positive_int("mlp_width", self.mlp_width, 0)
        scale = self.init_scale
        if isinstance(scale, bool) or not isinstance(scale, int | float) \
                or not math.isfinite(scale) or scale <= 0:
            raise ConfigError(f"init_scale must be a finite number > 0, got {scale!r}")

    def key_width(self, d: int) -> int:
        """k, each head's key and query width: ``key_dim``, or d+1."""
        return d + 1 if self.key_dim is None else self.key_dim


class SoftmaxAttention(Model):
    """One-layer softmax attention with a residual stream and an optional MLP (module docs).

    W_K, W_Q: (H, k, d+1); W_V: (H, d+1, d+1); with mlp_width m > 0 also W_1: (m, d+1),
    b_1: (m,), W_2: (d+1, m), b_2: (d+1,). Trains on whole prompts; it has no linear
    read-out, so it is judged by its test loss and by von Oswald et al.'s measures against
    one-step GD, ridge and OLS.
    """

    name = "softmax"
    description = "one layer of softmax attention (heads, optional MLP), whole prompts"
    options_class = SoftmaxModelOptions
    hook_points = (
        HookPoint("resid.0", "(B, n+1, d+1)", "the tokens e_1..e_n, e_q", per_layer=False),
        HookPoint("attn.1", "(B, 1, d+1)", "the heads' output at the query, sum_h W_V^h "
                  "sum_i a^h_i e_i", per_layer=False),
        HookPoint("resid.1", "(B, 1, d+1)", "the query's stream t after attention (and the "
                  "MLP); the prediction is its last coordinate", per_layer=False),
    )

    @classmethod
    def check_options(cls, options: Any, d: int) -> None:
        options.check(d)

    @classmethod
    def create(
        cls, d: int, options: Any, generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> SoftmaxAttention:
        return cls(d, options, generator, dtype)

    @classmethod
    def token_width(cls, options: Any, d: int) -> int:
        """The wider of a head's key (k) and a token (d+1)."""
        return max(int(options.key_width(d)), d + 1)

    @classmethod
    def training_defaults(cls, options: Any) -> dict[str, Any]:
        """Whole prompts cost n times more than statistics: smaller batches, a larger lr
        (measured: d = 5, n = 20, 1000 x 1024 at lr 0.01 reaches 1.49 against L* = 1.44)."""
        return {"batch": 1024, "lr": 0.01, "steps": 1000}

    W_K: nn.Parameter
    W_Q: nn.Parameter
    W_V: nn.Parameter

    def __init__(
        self,
        d: int,
        options: SoftmaxModelOptions | None = None,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        """The model for dimension d of ``options`` (default ``SoftmaxModelOptions()``),
        seeded."""
        super().__init__()
        options = SoftmaxModelOptions() if options is None else options
        options.check(d)
        self.options = options
        self._d = d
        self.key_width = options.key_width(d)
        init_scale = options.init_scale
        d1, k, heads, width = d + 1, self.key_width, options.heads, options.mlp_width
        device = generator.device if generator is not None else torch.device("cpu")

        def draw(*shape: int) -> nn.Parameter:
            values = torch.randn(*shape, generator=generator, dtype=dtype, device=device)
            return nn.Parameter(init_scale * values)

        self.W_K = draw(heads, k, d1)
        self.W_Q = draw(heads, k, d1)
        self.W_V = draw(heads, d1, d1)
        self.mlp: nn.ParameterDict | None = None
        if width > 0:
            self.mlp = nn.ParameterDict({
                "W_1": draw(width, d1),
                "b_1": nn.Parameter(torch.zeros(width, dtype=dtype, device=device)),
                "W_2": draw(d1, width),
                "b_2": nn.Parameter(torch.zeros(d1, dtype=dtype, device=device)),
            })

    @property
    def d(self) -> int:
        return self._d

    def attention_weights(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor
                          ) -> torch.Tensor:
        """a^h_i for X: (B, n, d), y: (B, n), x_q: (B, d) -> (B, H, n), summing to 1 over n."""
        tokens = torch.cat([X, y[..., None]], dim=-1)                       # (B, n, d+1)
        keys = torch.einsum("hkc,bnc->bhnk", self.W_K, tokens)              # (B, H, n, k)
        queries = self.W_Q[:, :, : self.d] @ x_q.T                          # (H, k, B)
        logits = torch.einsum("bhnk,hkb->bhn", keys, queries) / math.sqrt(self.key_width)
        return torch.softmax(logits, dim=-1)

    def _record_hooks(self, tokens: torch.Tensor, pooled: torch.Tensor,
                      x_q: torch.Tensor) -> None:
        """resid.0, attn.1 and resid.1 (``hook_points``)."""
        query = torch.cat([x_q, x_q.new_zeros(x_q.shape[0], 1)], dim=-1)
        self.record("resid.0", torch.cat([tokens, query[:, None]], dim=1))
        attention = torch.einsum("hoc,bhc->bo", self.W_V, pooled)
        self.record("attn.1", attention[:, None])
        stream = query + attention
        if self.mlp is not None:
            hidden = torch.relu(stream @ self.mlp["W_1"].T + self.mlp["b_1"])
            stream = stream + hidden @ self.mlp["W_2"].T + self.mlp["b_2"]
        self.record("resid.1", stream[:, None])

    def forward(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n), x_q: (B, d) -> yhat: (B,)."""
        weights = self.attention_weights(X, y, x_q)                          # (B, H, n)
        tokens = torch.cat([X, y[..., None]], dim=-1)                       # (B, n, d+1)
        pooled = torch.einsum("bhn,bnc->bhc", weights, tokens)              # (B, H, d+1)
        if self.recording_hooks():
            self._record_hooks(tokens, pooled, x_q)
        if self.mlp is None:                                                # only t[d] is read
            yhat: torch.Tensor = torch.einsum("hc,bhc->b", self.W_V[:, self.d], pooled)
            return yhat
        stream = torch.cat([x_q, x_q.new_zeros(x_q.shape[0], 1)], dim=-1)   # e_q: (B, d+1)
        stream = stream + torch.einsum("hoc,bhc->bo", self.W_V, pooled)
        W_1: torch.Tensor = self.mlp["W_1"]
        W_2: torch.Tensor = self.mlp["W_2"]
        hidden = torch.relu(stream @ W_1.T + self.mlp["b_1"])              # (B, m)
        stream = stream + hidden @ W_2.T + self.mlp["b_2"]
        prediction: torch.Tensor = stream[:, self.d]
        return prediction
