'''The self-contained sources ``iclab export`` writes beside a model's weights: a PyTorch
module and a NumPy loader, each needing only its library (never iclab).'''

TORCH_SOURCE = '''"""One-layer linear self-attention exported by iclab: plain PyTorch, no iclab.

    model = load()                      # model.pt beside this file, float64
    yhat = model(X, y, x_q)             # X: (B, n, d), y: (B, n), x_q: (B, d) -> (B,)

Tokens e_i = [x_i; y_i], the query e_q = [x_q; 0]; with u = W_V^T h and
M = (W_K^T W_Q)[:, :d], yhat = sum_i (u . e_i)(e_i . M x_q) (+ the query's own term with
attend_query), divided by n with normalise.
"""

from pathlib import Path

import torch
from torch import nn

WEIGHTS = Path(__file__).with_name("model.pt")


class LinearSelfAttention(nn.Module):
    def __init__(self, d: int, key_width: int, value_width: int, normalise: bool = False,
                 attend_query: bool = False, dtype: torch.dtype = torch.float64) -> None:
        super().__init__()
        self.d, self.normalise, self.attend_query = d, normalise, attend_query
        self.W_K = nn.Parameter(torch.zeros(key_width, d + 1, dtype=dtype))
        self.W_Q = nn.Parameter(torch.zeros(key_width, d + 1, dtype=dtype))
        self.W_V = nn.Parameter(torch.zeros(value_width, d + 1, dtype=dtype))
        self.h = nn.Parameter(torch.zeros(value_width, dtype=dtype))

    def effective(self) -> tuple[torch.Tensor, torch.Tensor]:
        """u = W_V^T h: (d+1,) and M = (W_K^T W_Q)[:, :d]: (d+1, d)."""
        return self.W_V.T @ self.h, self.W_K.T @ self.W_Q[:, : self.d]

    def forward(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        d, n = self.d, X.shape[1]
        u, M = self.effective()
        Mx_q = x_q @ M.T
        a = X @ u[:d] + y * u[d]
        b = torch.bmm(X, Mx_q[:, :d, None]).squeeze(-1) + y * Mx_q[:, d, None]
        yhat = (a * b).sum(-1)
        if self.attend_query:
            yhat = yhat + (x_q @ u[:d]) * (x_q * (x_q @ M.T)[:, :d]).sum(-1)
        if self.normalise:
            yhat = yhat / n
        return yhat


def load(path: "str | Path" = WEIGHTS) -> LinearSelfAttention:
    """The exported model with its weights (torch.load with weights_only=True), in eval mode."""
    saved = torch.load(path, map_location="cpu", weights_only=True)
    model = LinearSelfAttention(**saved["config"])
    model.load_state_dict(saved["state_dict"])
    return model.eval()
'''

NUMPY_SOURCE = '''"""One-layer linear self-attention exported by iclab as NumPy arrays, no iclab.

    predict = load()                    # weights.npz beside this file
    yhat = predict(X, y, x_q)           # X: (B, n, d), y: (B, n), x_q: (B, d) -> (B,)
"""

from pathlib import Path

import numpy as np

WEIGHTS = Path(__file__).with_name("weights.npz")


def load(path="WEIGHTS"):
    """A function (X, y, x_q) -> yhat of the exported weights (float64)."""
    arrays = np.load(WEIGHTS if path == "WEIGHTS" else path)
    W_K, W_Q, W_V, h = (arrays[k] for k in ("W_K", "W_Q", "W_V", "h"))
    d, normalise, attend_query = int(arrays["d"]), bool(arrays["normalise"]), \\
        bool(arrays["attend_query"])
    u, M = W_V.T @ h, W_K.T @ W_Q[:, :d]

    def predict(X, y, x_q):
        Mx_q = x_q @ M.T
        a = X @ u[:d] + y * u[d]
        b = np.einsum("bnd,bd->bn", X, Mx_q[:, :d]) + y * Mx_q[:, d, None]
        yhat = (a * b).sum(-1)
        if attend_query:
            yhat = yhat + (x_q @ u[:d]) * (x_q * Mx_q[:, :d]).sum(-1)
        return yhat / X.shape[1] if normalise else yhat

    return predict
'''
