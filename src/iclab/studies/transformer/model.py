"""The ``transformer`` model: a decoder-only pre-LayerNorm transformer (GPT-2 style) that
reads a prompt as the interleaved sequence x_1, y_1, x_2, y_2, ..., x_k and predicts y_i at
the position of x_i, from the examples before it (Garg, Tsipras, Liang and Valiant 2022).

Tokens: x_i enters as x_i, y_i as [y_i, 0, ..., 0] (both in R^d), each mapped to the residual
stream by one linear read-in, plus a learned position embedding (2 ``max_examples`` rows).
Each block: h <- h + Attn(LN(h)), h <- h + MLP(LN(h)), with causal multi-head attention
through ``torch.nn.functional.scaled_dot_product_attention`` (fused kernels on a GPU) and a
GELU MLP; a final LayerNorm and a linear read-out give one number per position, read at the
x positions. So one prompt of n examples gives the n predictions
``predict_prefixes(X, y) -> (B, n)``, the i-th from examples 1..i-1 and x_i, and the
prediction at the query is the last of those on the prompt with x_q appended.

Initialisation (seeded): every weight matrix and embedding N(0, init_scale^2), biases 0,
LayerNorm gains 1. The default init_scale is 0.1, not GPT-2's 0.02: at d = 5, n = 20 with
0.02 the loss stays at the prior's, d, for the first 4000 steps (the plateau before the model
learns to pair each y_i with its x_i), while with 0.1 it has halved by step 500
(docs/guide/transformers.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn import functional

from iclab.models.base import ExportedModel, Model
from iclab.models.hooks import HookPoint
from iclab.studies.transformer.export_source import NUMPY_SOURCE, TORCH_SOURCE
from iclab.studies.transformer.options import TransformerOptions
from iclab.utils.errors import ConfigError

EVAL_CHUNK = 2048
"""Prompts per forward pass when no gradient is recorded (bounds the activations' memory)."""


class Block(nn.Module):
    """One pre-LayerNorm block: causal multi-head attention, then a GELU MLP."""

    def __init__(self, width: int, heads: int, hidden: int, dtype: torch.dtype,
                 device: torch.device) -> None:
        super().__init__()
        kwargs: dict[str, Any] = {"dtype": dtype, "device": device}
        self.heads = heads
        self.ln_1 = nn.LayerNorm(width, **kwargs)
        self.qkv = nn.Linear(width, 3 * width, **kwargs)
        self.proj = nn.Linear(width, width, **kwargs)
        self.ln_2 = nn.LayerNorm(width, **kwargs)
        self.fc = nn.Linear(width, hidden, **kwargs)
        self.out = nn.Linear(hidden, width, **kwargs)

    def forward(self, h: torch.Tensor, drop: Any,
                record: Callable[[torch.Tensor], None] | None = None) -> torch.Tensor:
        """h: (B, T, width) -> (B, T, width); ``drop`` applies the residual dropout;
        ``record``, if given, receives the attention output (B, T, width) (a hook point)."""
        batch, length, width = h.shape
        q, k, v = self.qkv(self.ln_1(h)).split(width, dim=-1)
        shape = (batch, length, self.heads, width // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))       # (B, H, T, w/H)
        attended = functional.scaled_dot_product_attention(
            q, k, v, is_causal=True)
        attention = self.proj(attended.transpose(1, 2).reshape(batch, length, width))
        if record is not None:
            record(attention)
        h = h + drop(attention)
        out: torch.Tensor = h + drop(self.out(functional.gelu(self.fc(self.ln_2(h)))))
        return out


class Transformer(Model):
    """The GPT-style in-context learner (module docstring). No linear read-out, no
    statistics, no exact loss: it trains on whole prompts, on the loss averaged over every
    prefix (``has_prefix_predictions``)."""

    name = "transformer"
    description = ("decoder-only pre-LayerNorm transformer on x_1, y_1, ..., x_k (Garg et al. "
                   "2022), trained on every prefix")
    options_class = TransformerOptions
    has_prefix_predictions = True
    has_export = True
    hook_points = (
        HookPoint("resid", "(B, 2n+1, width)", "the residual stream after block l (resid.0: "
                  "read-in plus positions) at x_1, y_1, ..., x_n, y_n, x_q", first_layer=0,
                  patchable=True),
        HookPoint("attn", "(B, 2n+1, width)", "block l's attention output (after its "
                  "projection, before the residual sum)"),
    )

    @classmethod
    def create(
        cls, d: int, options: Any, generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> Transformer:
        return cls(d, options, generator, dtype)

    @classmethod
    def training_defaults(cls, options: Any) -> dict[str, Any]:
        """Small batches of whole prompts, Adam at 1e-3 with a short warm-up and gradient
        clipping (docs/guide/transformers.md: d = 5, n = 20 in a few CPU minutes)."""
        return {"batch": 64, "lr": 0.001, "steps": 4000, "warmup": 200, "clip_grad": 1.0,
                "eval_prompts": 4000}

    @classmethod
    def check_options(cls, options: Any, d: int) -> None:
        options.check(d)

    @classmethod
    def parameter_count(cls, options: Any, d: int) -> int:
        """read-in, positions, per block two LayerNorms, q/k/v/proj and the MLP, the final
        LayerNorm and the read-out (``__init__``)."""
        w, h = options.width, options.hidden()
        block = 2 * 2 * w + 4 * (w * w + w) + (w * h + h) + (h * w + w)
        return int((d * w + w) + 2 * options.max_examples * w + options.layers * block
            + 2 * w + (w + 1))

    @classmethod
    def check_prompt_length(cls, options: Any, n: int) -> None:
        """ConfigError unless a prompt of n examples and its query fit the positions."""
        if n + 1 > options.max_examples:
            raise ConfigError(f"n + 1 = {n + 1} examples do not fit the transformer's "
                              f"max_examples = {options.max_examples}; raise --max-examples")

    def __init__(self, d: int, options: TransformerOptions | None = None,
                 generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        options = TransformerOptions() if options is None else options
        options.check(d)
        self.options = options
        self._d = d
        device = generator.device if generator is not None else torch.device("cpu")
        width = options.width
        self.read_in = nn.Linear(d, width, dtype=dtype, device=device)
        self.positions = nn.Parameter(torch.zeros(2 * options.max_examples, width, dtype=dtype,
                                                  device=device))
        self.blocks = nn.ModuleList(Block(width, options.heads, options.hidden(), dtype, device)
                                    for _ in range(options.layers))
        self.ln_f = nn.LayerNorm(width, dtype=dtype, device=device)
        self.read_out = nn.Linear(width, 1, dtype=dtype, device=device)
        with torch.no_grad():
            for name, parameter in self.named_parameters():
                if name.endswith("bias"):
                    parameter.zero_()
                elif parameter.dim() == 1:                                  # LayerNorm gains
                    parameter.fill_(1.0)
                else:
                    parameter.copy_(options.init_scale * torch.randn(
                        parameter.shape, generator=generator, dtype=dtype, device=device))
        self._dropout_generator = torch.Generator(device=device)
        self._dropout_generator.manual_seed(0 if generator is None else
                                            int(generator.initial_seed()) % 2**63)

    @property
    def d(self) -> int:
        return self._d

    def _drop(self, tensor: torch.Tensor) -> torch.Tensor:
        p = self.options.dropout
        if not self.training or p == 0:
            return tensor
        keep = torch.rand(tensor.shape, generator=self._dropout_generator, dtype=tensor.dtype,
                          device=tensor.device) >= p
        return tensor * keep / (1 - p)

    def _prefixes(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        batch, n, d = X.shape
        if n > self.options.max_examples:
            raise ConfigError(f"a prompt of {n} examples does not fit the transformer's "
                              f"max_examples = {self.options.max_examples}")
        tokens = X.new_zeros(batch, 2 * n, d)
        tokens[:, 0::2] = X
        tokens[:, 1::2, 0] = y
        h = self.read_in(tokens) + self.positions[: 2 * n]
        h = self._hooked("resid.0", h)
        injected, layer = h, 0
        for loop in range(self.options.loops or 1):  # weight-tied passes, input injection
            h = h + injected if loop else h
            for block in self.blocks:  # hook layer l counts every block applied, all loops
                layer += 1
                h = block(h, self._drop, self._recorder(f"attn.{layer}"))
                h = self._hooked(f"resid.{layer}", h)
        out: torch.Tensor = self.read_out(self.ln_f(h[:, 0::2]))[..., 0]   # (B, n)
        return out

    def hook_depth(self) -> int:
        """Blocks applied: layers x loops (a looped model's passes are layers of their own)."""
        return self.options.layers * (self.options.loops or 1)

    def _record_tokens(self, name: str, h: torch.Tensor) -> None:
        """Record ``h`` without its last token (the query's label slot, which no prediction
        reads), so the query is the last position (``iclab.models.hooks``)."""
        if self.recording_hooks():
            self.record(name, h[:, :-1])

    def _hooked(self, name: str, h: torch.Tensor) -> torch.Tensor:
        """Record hook point ``name`` and apply its patch (both without the last token)."""
        self._record_tokens(name, h)
        if self.hook_patches is None:
            return h
        return torch.cat([self.patched(name, h[:, :-1]), h[:, -1:]], dim=1)

    def _recorder(self, name: str) -> Callable[[torch.Tensor], None] | None:
        return (lambda h: self._record_tokens(name, h)) if self.recording_hooks() else None

    def predict_prefixes(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n) -> (B, n): entry i predicts y_i from examples < i and x_i
        (entry 0 from x_1 alone). In chunks of ``EVAL_CHUNK`` prompts without gradients; in
        bfloat16 autocast on cuda when the options ask for it."""
        autocast = self.options.bfloat16 and X.device.type == "cuda"
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            if torch.is_grad_enabled() or X.shape[0] <= EVAL_CHUNK:
                out = self._prefixes(X, y)
            else:
                out = torch.cat([self._prefixes(X[i:i + EVAL_CHUNK], y[i:i + EVAL_CHUNK])
                                 for i in range(0, X.shape[0], EVAL_CHUNK)])
        return out.to(X.dtype)

    def forward(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n), x_q: (B, d) -> yhat: (B,), the prediction at x_q."""
        X_all = torch.cat([X, x_q[:, None]], dim=1)
        y_all = torch.cat([y, y.new_zeros(y.shape[0], 1)], dim=1)
        return self.predict_prefixes(X_all, y_all)[:, -1]

    def exported(self) -> ExportedModel:
        """This model as a plain PyTorch module (the same parameter names and operations,
        without dropout) and a NumPy predictor, with float64 weights (``iclab export``)."""
        options = self.options
        config = {"d": int(self.d), "layers": int(options.layers), "heads": int(options.heads),
                  "width": int(options.width), "hidden": int(options.hidden()),
                  "max_examples": int(options.max_examples)}
        state = {name: tensor.detach().to(torch.float64).clone()
                 for name, tensor in self.state_dict().items()}
        return ExportedModel(TORCH_SOURCE, NUMPY_SOURCE, config, state)
