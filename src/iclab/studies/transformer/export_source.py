'''The sources ``iclab export`` writes beside the transformer's weights (``Model.exported``):
a plain PyTorch module with the same parameter names and the same operations in the same order
as ``iclab.studies.transformer.model`` (so its predictions are identical, bit for bit), and a
NumPy predictor; each needs only its library, never iclab. Dropout is left out: an exported
model predicts, it does not train.'''

TORCH_SOURCE = '''"""A pre-LayerNorm decoder-only transformer exported by iclab: plain PyTorch.

    model = load()                      # model.pt beside this file, float64
    yhat = model(X, y, x_q)             # X: (B, n, d), y: (B, n), x_q: (B, d) -> (B,)
    prefixes = model.predict_prefixes(X, y)   # (B, n): y_i from examples < i and x_i

Tokens: x_i as x_i, y_i as [y_i, 0, ..., 0], interleaved x_1, y_1, x_2, ...; one linear
read-in plus learned positions; each block h <- h + Attn(LN(h)), h <- h + MLP(LN(h)) with
causal multi-head attention and a GELU MLP; a final LayerNorm and a linear read-out at the
x positions (Garg, Tsipras, Liang and Valiant 2022). The submodules (read_in, blocks[i].ln_1,
.qkv, .proj, .ln_2, .fc, .out, ln_f, read_out) are what tools such as nnsight trace.
"""

from pathlib import Path

import torch
from torch import nn
from torch.nn import functional

WEIGHTS = Path(__file__).with_name("model.pt")
EVAL_CHUNK = 2048


class Block(nn.Module):
    def __init__(self, width: int, heads: int, hidden: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(width, dtype=dtype)
        self.qkv = nn.Linear(width, 3 * width, dtype=dtype)
        self.proj = nn.Linear(width, width, dtype=dtype)
        self.ln_2 = nn.LayerNorm(width, dtype=dtype)
        self.fc = nn.Linear(width, hidden, dtype=dtype)
        self.out = nn.Linear(hidden, width, dtype=dtype)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        batch, length, width = h.shape
        q, k, v = self.qkv(self.ln_1(h)).split(width, dim=-1)
        shape = (batch, length, self.heads, width // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        attended = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        h = h + self.proj(attended.transpose(1, 2).reshape(batch, length, width))
        return h + self.out(functional.gelu(self.fc(self.ln_2(h))))


class Transformer(nn.Module):
    def __init__(self, d: int, layers: int, heads: int, width: int, hidden: int,
                 max_examples: int, dtype: torch.dtype = torch.float64) -> None:
        super().__init__()
        self.d, self.max_examples = d, max_examples
        self.read_in = nn.Linear(d, width, dtype=dtype)
        self.positions = nn.Parameter(torch.zeros(2 * max_examples, width, dtype=dtype))
        self.blocks = nn.ModuleList(Block(width, heads, hidden, dtype) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width, dtype=dtype)
        self.read_out = nn.Linear(width, 1, dtype=dtype)

    def _prefixes(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        batch, n, d = X.shape
        if n > self.max_examples:
            raise ValueError(f"a prompt of {n} examples does not fit max_examples = "
                             f"{self.max_examples}")
        tokens = X.new_zeros(batch, 2 * n, d)
        tokens[:, 0::2] = X
        tokens[:, 1::2, 0] = y
        h = self.read_in(tokens) + self.positions[: 2 * n]
        for block in self.blocks:
            h = block(h)
        return self.read_out(self.ln_f(h[:, 0::2]))[..., 0]

    def predict_prefixes(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n) -> (B, n), in chunks of EVAL_CHUNK prompts without
        gradients (as iclab evaluates)."""
        if torch.is_grad_enabled() or X.shape[0] <= EVAL_CHUNK:
            out = self._prefixes(X, y)
        else:
            out = torch.cat([self._prefixes(X[i:i + EVAL_CHUNK], y[i:i + EVAL_CHUNK])
                             for i in range(0, X.shape[0], EVAL_CHUNK)])
        return out.to(X.dtype)

    def forward(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        X_all = torch.cat([X, x_q[:, None]], dim=1)
        y_all = torch.cat([y, y.new_zeros(y.shape[0], 1)], dim=1)
        return self.predict_prefixes(X_all, y_all)[:, -1]


def load(path: "str | Path" = WEIGHTS) -> Transformer:
    """The exported model with its weights (torch.load with weights_only=True), in eval mode."""
    saved = torch.load(path, map_location="cpu", weights_only=True)
    model = Transformer(**saved["config"])
    model.load_state_dict(saved["state_dict"])
    return model.eval()
'''

NUMPY_SOURCE = '''"""A decoder-only transformer exported by iclab as NumPy arrays (float64).

    predict = load()                    # weights.npz beside this file
    yhat = predict(X, y, x_q)           # X: (B, n, d), y: (B, n), x_q: (B, d) -> (B,)

The same computation as model.py (LayerNorm eps 1e-5, exact GELU, causal softmax attention),
summed in NumPy's order: equal to PyTorch's up to float64 rounding.
"""

import json
import math
from pathlib import Path

import numpy as np

WEIGHTS = Path(__file__).with_name("weights.npz")
_erf = np.vectorize(math.erf)


def _layer_norm(h, weight, bias):
    mean = h.mean(-1, keepdims=True)
    variance = ((h - mean) ** 2).mean(-1, keepdims=True)
    return (h - mean) / np.sqrt(variance + 1e-5) * weight + bias


def _gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def load(path="WEIGHTS"):
    """A function (X, y, x_q) -> yhat of the exported weights."""
    arrays = np.load(WEIGHTS if path == "WEIGHTS" else path)
    config = json.loads(str(arrays["config_json"]))
    w = {name: arrays[name] for name in arrays.files if name != "config_json"}
    heads = config["heads"]

    def linear(h, name):
        return h @ w[name + ".weight"].T + w[name + ".bias"]

    def block(h, i):
        p = f"blocks.{i}."
        batch, length, width = h.shape
        q, k, v = np.split(linear(_layer_norm(h, w[p + "ln_1.weight"], w[p + "ln_1.bias"]),
                                  p + "qkv"), 3, axis=-1)
        q, k, v = (t.reshape(batch, length, heads, width // heads).transpose(0, 2, 1, 3)
                   for t in (q, k, v))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(width // heads)
        scores = np.where(np.tril(np.ones((length, length), dtype=bool)), scores, -np.inf)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        attended = (scores / scores.sum(-1, keepdims=True)) @ v
        h = h + linear(attended.transpose(0, 2, 1, 3).reshape(batch, length, width),
                       p + "proj")
        hidden = _gelu(linear(_layer_norm(h, w[p + "ln_2.weight"], w[p + "ln_2.bias"]),
                              p + "fc"))
        return h + linear(hidden, p + "out")

    def predict(X, y, x_q):
        X = np.concatenate([X, x_q[:, None]], axis=1)
        y = np.concatenate([y, np.zeros((y.shape[0], 1))], axis=1)
        batch, n, d = X.shape
        tokens = np.zeros((batch, 2 * n, d))
        tokens[:, 0::2] = X
        tokens[:, 1::2, 0] = y
        h = linear(tokens, "read_in") + w["positions"][: 2 * n]
        for i in range(config["layers"]):
            h = block(h, i)
        h = _layer_norm(h[:, 0::2], w["ln_f.weight"], w["ln_f.bias"])
        return linear(h, "read_out")[:, -1, 0]

    return predict
'''
