"""The multi-head linear attention of the training-dynamics literature (docs/theory.md
section 18; Zhang, Singh, Latham and Saxe 2025), built by ``lsa`` when its options ask for
``heads`` or ``kq`` separate.

Held nuisance-free, as the one-layer model's gd-subspace start (the values read only the
label, keys and queries only the inputs), H heads with outputs summed predict

    yhat = sum_h v_h y^T X W_h x_q = x_q^T Gamma X^T y,   Gamma = sum_h v_h W_h^T

(divided by n when the model normalises), with W_h one d x d matrix per head (``kq`` merged)
or W_h = K_h^T Q_h, keys and queries K_h, Q_h: (R, d) of rank R (``kq`` separate). Every
weight starts N(0, init_scale^2), drawn in the order v, W (or v, K, Q).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from iclab.models.base import Model
from iclab.models.lsa import activations
from iclab.models.lsa.options import LSAOptions
from iclab.models.readout import LinearReadout
from iclab.utils.batches import XYStatistics, ZStatistics


class MultiHeadLinearAttention(Model):
    """H heads of linear attention, merged or separate keys and queries (module doc)."""

    name = "lsa"
    description = "multi-head linear attention (lsa with --heads or --kq separate)"
    options_class = LSAOptions
    has_readout = True
    has_statistics = True
    statistics_kinds = ("xy", "wishart")
    has_exact_loss = True
    hook_points = activations.HEADS

    def __init__(self, d: int, options: LSAOptions, generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        options.check_layer(d)
        self.options = options
        self._d = d
        H, R = options.head_count, options.rank
        device = generator.device if generator is not None else torch.device("cpu")

        def draw(*shape: int) -> nn.Parameter:
            values = torch.randn(*shape, generator=generator, dtype=dtype, device=device)
            return nn.Parameter(options.init_scale * values)

        self.v = draw(H)
        self.W: nn.Parameter | None = None
        self.K: nn.Parameter | None = None
        self.Q: nn.Parameter | None = None
        if options.kq == "merged":
            self.W = draw(H, d, d)
        else:
            self.K = draw(H, R, d)
            self.Q = draw(H, R, d)

    @property
    def d(self) -> int:
        return self._d

    def raw_parameters(self) -> list[np.ndarray]:
        """[v, W] or [v, K, Q] as float64 arrays (the layout of
        ``iclab.studies.dynamics.heads_loss.HeadsLoss``)."""
        weights = [self.v, self.W] if self.W is not None else [self.v, self.K, self.Q]
        return [w.detach().to("cpu", torch.float64).numpy().copy()
                for w in weights if w is not None]

    def gamma(self) -> torch.Tensor:
        """Gamma = sum_h v_h W_h^T: (d, d), without the 1/n of a normalising model."""
        if self.W is not None:
            merged: torch.Tensor = torch.tensordot(self.v, self.W, dims=1).T
            return merged
        assert self.K is not None and self.Q is not None
        H, R, d = self.K.shape
        scaled = self.v.repeat_interleave(R)[:, None] * self.Q.reshape(H * R, d)
        return scaled.T @ self.K.reshape(H * R, d)

    def _predict(self, xy: torch.Tensor, x_q: torch.Tensor, n: int) -> torch.Tensor:
        """xy: (B, d) the sums X^T y, x_q: (B, d) -> x_q^T Gamma X^T y: (B,)."""
        yhat = ((x_q @ self.gamma().to(xy.dtype)) * xy).sum(-1)
        return yhat / n if self.options.normalise else yhat

    def forward(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n), x_q: (B, d) -> yhat: (B,)."""
        xy = torch.bmm(y[:, None, :], X).squeeze(1)            # (B, d)
        if self.recording_hooks():
            self.record("resid.0", activations.prompt_stream(X, y, x_q))
            self.record("attn.1", activations.head_outputs(
                xy, x_q, self.W, self.K, self.Q, X.shape[1], self.options.normalise))
        return self._predict(xy, x_q, X.shape[1])

    def forward_statistics(self, stats: XYStatistics | ZStatistics) -> torch.Tensor:
        """The prediction from X^T y (or Z, whose last column holds it) and x_q: (B,), equal
        in law to ``forward``."""
        if isinstance(stats, ZStatistics):
            return self._predict(stats.Z[:, : self.d, self.d], stats.x_q, stats.n)
        return self._predict(stats.xy, stats.x_q, stats.n)

    def readout(self, n: int) -> LinearReadout:
        """The nuisance-free read-out of Gamma (the 1/n of a normalising model folded in)."""
        with torch.no_grad():
            gamma = self.gamma().detach().to("cpu", torch.float64).numpy()
        return LinearReadout.from_gamma(gamma / n if self.options.normalise else gamma)

    def exact_loss(self, task: Any) -> torch.Tensor:
        """The exact population loss on a Gaussian family: float64 scalar, differentiable."""
        from iclab.theory.population import PopulationLoss

        gamma = self.gamma().to(torch.float64)
        d = self.d
        u = torch.zeros(d + 1, dtype=torch.float64, device=gamma.device)
        u[d] = 1.0
        M = torch.cat([gamma.T, torch.zeros(1, d, dtype=torch.float64, device=gamma.device)])
        exact = PopulationLoss.from_task(task, gamma.device)
        return exact(u, M, self.options.normalise, False)
