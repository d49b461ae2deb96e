"""``lsa-cot``: a one-layer linear transformer that predicts the task vector w and writes its
intermediate estimates as tokens it reads back (chain of thought; Huang, Wang and Lee, ICLR
2025; docs/theory.md section 21).

Tokens of width 2d + 2: an example is e_j = [x_j; y_j; 0_d; 0], an estimate c_i = [0_d; 0;
w_i; 1], starting from c_0 = [0; 0; 0; 1]. The layer is the paper's linear self-attention

    f(Z) = Z + W_PV Z M Z^T W_KQ Z / n,

M selecting the n examples as keys and values, with full (2d+2) x (2d+2) matrices W_PV, W_KQ;
the next estimate is the w-block of the last token's output. Only the w-rows x (x, y)-columns
of W_PV (A, d x (d+1)) and the (x, y)-rows x (w, 1)-columns of W_KQ (B, u) reach it:

    w_{i+1} = w_i + A G (B w_i + u),   G = (1/n) sum_j [x_j; y_j][x_j; y_j]^T,

which is one GD step w_i - eta (S w_i - X^T y / n) at A = [-eta I, 0], B = [I; 0],
u = [0; -1]. With ``cot_steps`` K the model writes w_1..w_K autoregressively, with the same
weights at every step, and answers w_K; ``forward`` returns w_K^T x_q (so the core's test loss
is E||w_K - w||^2 + sigma^2 for x_q ~ N(0, I)). Training (``prompt_loss``):

- K = 0 (no chain of thought): one estimate w_1 trained on w itself, through the query,
  E (w_1^T x_q - y_q)^2 = E ||w_1 - w||^2 + sigma^2 (the same minimiser; an unbiased gradient);
- K >= 1: teacher-forced on the GD iterates g_1..g_K of the optimal constant step eta*_K of
  K-step GD (``weights_theory``, at the family's d, n, sigma): step i reads the true g_{i-1}
  and is scored on ||w_i - g_i||^2, averaged over the steps (the paper's CoT objective). One
  step size for every step because the layer's weights are shared across steps and an
  estimate token does not say which step it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn

from iclab.models.base import Model
from iclab.models.hooks import HookPoint
from iclab.studies.cot.weights_theory import MAX_STEPS, optimal_constant_step
from iclab.utils.batches import Prompts
from iclab.utils.fields import setting


@dataclass(frozen=True)
class CoTOptions:
    target: str = setting("weights", "What the model predicts: weights (the task vector w; "
                          "lsa-cot only).", choices=("weights",))
    cot_steps: int = setting(0, "Chain-of-thought steps K: estimate tokens the model writes "
                             "and reads back (0: one estimate, no chain of thought).",
                             minimum=0, maximum=MAX_STEPS)
    init_scale: float = setting(0.1, "Standard deviation of the initial weights.",
                                minimum=0.0, maximum=10.0)


class LSACoT(Model):
    name = "lsa-cot"
    description = ("one-layer linear transformer predicting w, writing K intermediate "
                   "estimates (chain of thought, --cot-steps K)")
    options_class = CoTOptions
    has_prompt_loss = True
    hook_points = (
        HookPoint("estimates", "(B, max(K, 1), d)", "the estimates w_1..w_K the layer writes, "
                  "the answer w_K last (the prediction is w_K . x_q)", per_layer=False,
                  query_last=False),
    )
    selected_by: ClassVar[tuple[str, ...]] = ("target",)

    def __init__(self, d: int, options: CoTOptions, pv: torch.Tensor, kq: torch.Tensor) -> None:
        super().__init__()
        self.d = d
        self.steps = options.cot_steps
        self.pv = nn.Parameter(pv)
        self.kq = nn.Parameter(kq)
        self.eta: float | None = None
        """The CoT targets' step size eta*_K (set by ``prepare_for_task``)."""

    @classmethod
    def create(cls, d: int, options: Any, generator: torch.Generator | None = None,
               dtype: torch.dtype = torch.float32) -> LSACoT:
        width = 2 * d + 2
        pv, kq = (options.init_scale * torch.randn(width, width, generator=generator,
                                                   dtype=dtype) for _ in range(2))
        return cls(d, options, pv, kq)

    @classmethod
    def parameter_count(cls, options: Any, d: int) -> int:
        return 2 * (2 * d + 2) ** 2

    @classmethod
    def token_width(cls, options: Any, d: int) -> int:
        return 2 * d + 2

    # --- the blocks that reach the read-out ----------------------------------------------------

    def blocks(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(A, B, u): W_PV's w-rows x (x, y)-columns, W_KQ's (x, y)-rows x w-columns and
        (x, y)-rows x the constant column."""
        d = self.d
        return self.pv[d + 1: 2 * d + 1, : d + 1], self.kq[: d + 1, d + 1: 2 * d + 1], \
            self.kq[: d + 1, 2 * d + 1]

    def step(self, G: torch.Tensor, estimate: torch.Tensor) -> torch.Tensor:
        """The next estimate from the current one: (B, d) -> (B, d); G: (B, d+1, d+1)."""
        A, B, u = self.blocks()
        keys = estimate @ B.T + u                                      # (B, d+1)
        return estimate + torch.einsum("ij,bjk,bk->bi", A, G, keys)

    @staticmethod
    def gram(X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """G = (1/n) sum_j [x_j; y_j][x_j; y_j]^T: (B, d+1, d+1)."""
        tokens = torch.cat([X, y[..., None]], dim=-1)
        return tokens.transpose(1, 2) @ tokens / X.shape[1]

    def estimates(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """w_1..w_max(K,1), written autoregressively: (B, max(K, 1), d)."""
        G = self.gram(X, y)
        estimate = X.new_zeros(X.shape[0], self.d)
        written = []
        for _ in range(max(self.steps, 1)):
            estimate = self.step(G, estimate)
            written.append(estimate)
        return torch.stack(written, dim=1)

    def forward(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        written = self.estimates(X, y)
        self.record("estimates", written)
        return (written[:, -1] * x_q).sum(-1)

    # --- training ------------------------------------------------------------------------------

    def prepare_for_task(self, task: Any) -> None:
        if self.steps > 0:
            self.eta = optimal_constant_step(self.steps, int(task.n), self.d,
                                             float(task.sigma))[0]

    def gd_iterates(self, X: torch.Tensor, y: torch.Tensor, eta: float) -> torch.Tensor:
        """g_0..g_K of GD with step eta from g_0 = 0: (B, K+1, d)."""
        n = X.shape[1]
        iterate = X.new_zeros(X.shape[0], self.d)
        out = [iterate]
        for _ in range(self.steps):
            residual = torch.einsum("bnd,bd->bn", X, iterate) - y
            iterate = iterate - eta * torch.einsum("bnd,bn->bd", X, residual) / n
            out.append(iterate)
        return torch.stack(out, dim=1)

    def prompt_loss(self, prompts: Any) -> torch.Tensor:
        batch: Prompts = prompts
        if self.steps == 0:
            loss: torch.Tensor = (self(batch.X, batch.y, batch.x_q) - batch.y_q).square().mean()
            return loss
        eta = self.eta if self.eta is not None else optimal_constant_step(
            self.steps, batch.X.shape[1], self.d, 0.0)[0]  # unprepared: noise-free targets
        with torch.no_grad():
            targets = self.gd_iterates(batch.X, batch.y, eta)         # (B, K+1, d)
        G = self.gram(batch.X, batch.y)
        steps = targets.shape[1] - 1
        read = targets[:, :-1].reshape(-1, self.d)                    # teacher-forced inputs
        repeated = G.repeat_interleave(steps, dim=0)
        predicted = self.step(repeated, read).reshape(-1, steps, self.d)
        loss = (predicted - targets[:, 1:]).square().sum(-1).mean()
        return loss

    def learned_steps(self) -> dict[str, float]:
        """The GD step the layer implements, read from its blocks: eta_w = -tr(A_x B_x)/d (the
        step on S w_i) and eta_b = tr(A_x) u_y / d (on X^T y / n), and the relative size of
        what is not GD, ||A_x B_x + eta_w I|| / ||eta_w I||."""
        with torch.no_grad():
            A, B, u = (block.double() for block in self.blocks())
            product = A[:, : self.d] @ B[: self.d]
            eta_w = float(-torch.trace(product)) / self.d
            eta_b = float(torch.trace(A[:, : self.d]) * u[self.d]) / self.d
            eye = torch.eye(self.d, dtype=torch.float64)
            off = float((product + eta_w * eye).norm() / max(abs(eta_w) * self.d**0.5, 1e-30))
        return {"eta_w": eta_w, "eta_b": eta_b, "non_gd": off}
