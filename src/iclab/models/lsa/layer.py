"""One layer of linear self-attention (docs/theory.md section 2).

Tokens e_i = [x_i; y_i] in R^{d+1}, the query e_q = [x_q; 0]. Parameters W_K, W_Q: (k, d+1),
W_V: (m, d+1), h: (m,). The prediction at the query is

    yhat = h^T sum_i (W_V e_i) (W_K e_i)^T (W_Q e_q) = u^T Z M x_q,

u = W_V^T h: (d+1,), M = (W_K^T W_Q)[:, :d]: (d+1, d), Z = sum_i e_i e_i^T. The forward never
forms Z nor any (d+1) x (d+1) matrix per prompt: with a_i = u.e_i and b_i = e_i.(M x_q),
yhat = sum_i a_i b_i, which costs O(n d) per prompt after the O(d^2) product M x_q.

Options: ``normalise`` divides the sum by n (multiplying the learned step size by n);
``attend_query`` adds the query token e_q to the sum (a term cubic in x_q).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from iclab.models.base import Model
from iclab.models.lsa import activations
from iclab.models.lsa.deep import DEEP_TRAINING, FULL_DEEP_WARMUP, DeepLinearSelfAttention
from iclab.models.lsa.hand_gradients import as_autograd_node, without_autograd
from iclab.models.lsa.heads import MultiHeadLinearAttention
from iclab.models.lsa.options import LSAOptions
from iclab.models.lsa.prompts import prompts_prediction
from iclab.models.lsa.statistics import plain_statistics_prediction, statistics_prediction
from iclab.models.lsa.statistics_loss import hand_worked_loss
from iclab.models.readout import LinearReadout
from iclab.tasks.base import nuisance_free_optimum
from iclab.utils.batches import GaussianStatistics, XYStatistics, ZStatistics
from iclab.utils.errors import ConfigError


class LinearSelfAttention(Model):
    """One-layer linear self-attention read out at the query token.

    Initialisation (every weight N(0, init_scale^2), drawn from ``generator``):
    - "random": all weights random;
    - "gd-subspace": then the keys' label column W_K[:, d] and the values' input columns
      W_V[:, :d] set to 0, so u_x = 0 and m_y = 0: no nuisance term at the start. This set is
      invariant under gradient flow on the population loss (the gradients in those coordinates
      are odd in (w, noise) there and average to 0), and it excludes the non-global local minima
      in which u_x is parallel to m_y and the x_y nuisance carries part of the GD term.
    """

    name = "lsa"
    description = "one layer of linear self-attention (the paper's model)"
    options_class = LSAOptions
    has_readout = True
    has_statistics = True
    statistics_kinds = ("bartlett", "wishart")
    has_exact_loss = True
    hook_points = activations.ONE_LAYER

    W_K: nn.Parameter
    W_Q: nn.Parameter
    W_V: nn.Parameter
    h: nn.Parameter

    @classmethod
    def create(
        cls, d: int, options: Any, generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> Model:
        """The ``lsa`` model of ``options`` (an ``LSAOptions``) for dimension d: this
        one-layer model, or the L-layer model when ``options.deep``."""
        if options.deep:
            return DeepLinearSelfAttention(d, options, generator, dtype)
        if options.multi_head:
            return MultiHeadLinearAttention(d, options, generator, dtype)
        return cls(d, options, generator, dtype)

    @classmethod
    def built_class(cls, options: Any) -> type[Model]:
        if options.deep:
            return DeepLinearSelfAttention
        return MultiHeadLinearAttention if options.multi_head else cls

    @classmethod
    def check_options(cls, options: Any, d: int) -> None:
        """What the model ``create`` builds would refuse: the L-layer stack's checks or the
        one layer's (the multi-head model's included)."""
        if options.deep:
            options.check_stack(d)
        else:
            options.check_layer(d)

    @classmethod
    def token_width(cls, options: Any, d: int) -> int:
        """The widest of a key (k), a value (m) and a token (d+1)."""
        return max(int(options.key_width(d)), int(options.value_width(d)), d + 1)

    def attends_query(self) -> bool:
        return bool(self.options.attend_query)

    @classmethod
    def depth_of(cls, options: Any) -> int | None:
        """L for the L-layer model (``options.deep``), None for the one-layer model."""
        return int(options.depth) if options.depth is not None else None

    @classmethod
    def training_defaults(cls, options: Any) -> dict[str, Any]:
        """The one-layer model keeps the global defaults; deeper models take ``DEEP_TRAINING``,
        the full ones with a warm-up (``FULL_DEEP_WARMUP``)."""
        if not options.deep:
            return {}
        warmup = {"warmup": FULL_DEEP_WARMUP} if options.parameterisation == "full" else {}
        return {**DEEP_TRAINING, **warmup}

    def __init__(
        self,
        d: int,
        options: LSAOptions | None = None,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        """One layer for dimension d of ``options`` (default ``LSAOptions()``), seeded."""
        super().__init__()
        options = LSAOptions() if options is None else options
        options.check_layer(d)
        if options.multi_head:
            raise ConfigError("these options build the multi-head model: use "
                              "LinearSelfAttention.create(d, options)")
        init, init_scale = options.init, options.init_scale
        self.options = options
        self._d = d
        self.init = init
        d1, k, m = d + 1, options.key_width(d), options.value_width(d)
        device = generator.device if generator is not None else torch.device("cpu")

        def draw(*shape: int) -> nn.Parameter:
            values = torch.randn(*shape, generator=generator, dtype=dtype, device=device)
            return nn.Parameter(init_scale * values)

        self.W_K = draw(k, d1)
        self.W_Q = draw(k, d1)
        self.W_V = draw(m, d1)
        self.h = draw(m)
        if init == "gd-subspace":
            with torch.no_grad():
                self.W_K[:, d] = 0.0
                self.W_V[:, :d] = 0.0

    @property
    def d(self) -> int:
        return self._d

    def effective(self) -> tuple[torch.Tensor, torch.Tensor]:
        """u = W_V^T h: (d+1,) and M = (W_K^T W_Q)[:, :d]: (d+1, d)."""
        u = self.W_V.T @ self.h
        M = self.W_K.T @ self.W_Q[:, : self.d]
        return u, M

    def _query_term(self, u: torch.Tensor, Mx_q: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """(u . e_q)(e_q . M x_q) for e_q = [x_q; 0]: (B,)."""
        d = self.d
        return (x_q @ u[:d]) * (x_q * Mx_q[:, :d]).sum(-1)

    def forward(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        """X: (B, n, d), y: (B, n), x_q: (B, d) -> yhat: (B,).

        Where a backward to the weights may follow (gradients recorded, prompts constant),
        the sum over the prompt and its backward are one autograd node written out by hand
        (``iclab.models.lsa.prompts``); otherwise the plain formula below, in the prompts'
        own layout."""
        d, n = self.d, X.shape[1]
        u, M = self.effective()
        if u.requires_grad and not (X.requires_grad or y.requires_grad or x_q.requires_grad):
            yhat = prompts_prediction(self.W_K, self.W_Q, self.W_V, self.h, X, y, x_q)
        else:
            Mx_q = x_q @ M.T                                     # (B, d+1)
            a = X @ u[:d] + y * u[d]                              # (B, n)  u . e_i
            b = torch.bmm(X, Mx_q[:, :d, None]).squeeze(-1) + y * Mx_q[:, d, None]
            yhat = (a * b).sum(-1)                                # (B,)
        if self.options.attend_query:
            yhat = yhat + self._query_term(u, x_q @ M.T, x_q)
        if self.options.normalise:
            yhat = yhat / n
        if self.recording_hooks():
            activations.record_one_layer(self, X, y, x_q)
        return yhat

    def readout(self, n: int) -> LinearReadout:
        """(u, M) in float64 with the 1/n of a normalising model folded into M."""
        with torch.no_grad():
            u, M = self.effective()
            u64 = u.detach().to("cpu", torch.float64).numpy()
            M64 = M.detach().to("cpu", torch.float64).numpy()
        if self.options.normalise:
            M64 = M64 / n
        return LinearReadout(np.array(u64), np.array(M64), not self.options.attend_query)

    def exact_loss(self, task: Any) -> torch.Tensor:
        """The exact population loss on a Gaussian family: float64 scalar, differentiable."""
        from iclab.theory.population import PopulationLoss

        u, M = self.effective()
        exact = PopulationLoss.from_task(task, u.device)
        return exact(u, M, self.options.normalise, self.options.attend_query)

    def prepare_for_task(self, task: Any) -> None:
        """With the gd-subspace start, keep u_x = m_y = 0 throughout training when the
        family's optimum provably has no nuisance term (sign-symmetric or rotation-invariant
        families, docs/theory.md section 3): sampled gradients in those coordinates are zero
        only on average, and their noise would otherwise carry the model off the subspace
        into spurious stationary points."""
        if self.init == "gd-subspace" and nuisance_free_optimum(task):
            self.constrain_nuisance_free()

    def constrain_nuisance_free(self) -> None:
        """Zero the keys' label column and the values' input columns (u_x = m_y = 0) and mask
        their gradients (``gradient_masks``), so that no optimiser step moves them."""
        d = self.d
        with torch.no_grad():
            self.W_K[:, d] = 0.0
            self.W_V[:, :d] = 0.0
        key_mask = torch.ones_like(self.W_K)
        key_mask[:, d] = 0.0
        value_mask = torch.ones_like(self.W_V)
        value_mask[:, :d] = 0.0
        self._gradient_masks = [(self.W_K, key_mask), (self.W_V, value_mask)]
        self._nuisance_free = True

    def statistics_kinds_now(self) -> tuple[str, ...]:
        """Held nuisance-free (u_x = m_y = 0 for good), the model also reads ``XYStatistics``
        (X^T y, x_q, y_q), in preference to Z: its prediction needs nothing else."""
        if getattr(self, "_nuisance_free", False):
            return ("bartlett", "xy", "wishart")
        return self.statistics_kinds

    def gradient_masks(self) -> list[tuple[nn.Parameter, torch.Tensor]]:
        return list(getattr(self, "_gradient_masks", []))

    def forward_statistics(
        self, stats: GaussianStatistics | ZStatistics | XYStatistics
    ) -> torch.Tensor:
        """The prediction from a batch of sufficient statistics: (B,), equal in law to
        ``forward`` on whole prompts (``iclab.models.lsa.statistics``: on Bartlett statistics
        with a hand-written backward; on Z, u^T Z M x_q; on X^T y, held nuisance-free,
        u_y (X^T y)^T M_x x_q)."""
        if isinstance(stats, XYStatistics):
            self._require_nuisance_free()
        if isinstance(stats, GaussianStatistics):
            yhat = statistics_prediction(self.W_K, self.W_Q, self.W_V, self.h, stats)
        else:
            yhat = plain_statistics_prediction(*self.effective(), stats)
        if self.options.attend_query:
            u, M = self.effective()
            yhat = yhat + self._query_term(u, stats.x_q @ M.T, stats.x_q)
        if self.options.normalise:
            yhat = yhat / stats.n
        return yhat

    def statistics_loss(
        self, stats: GaussianStatistics | ZStatistics | XYStatistics
    ) -> torch.Tensor:
        """The mean squared error on a batch of statistics; on ``ZStatistics`` without the
        query's own term and on ``XYStatistics``, one autograd node with its gradients worked
        out in the forward (``iclab.models.lsa.statistics_loss``), else from
        ``forward_statistics``."""
        hand = self._hand_worked_loss(stats)
        if hand is None:
            return super().statistics_loss(stats)
        compute, data = hand
        return as_autograd_node(compute, self._weights(), *data)

    def statistics_loss_and_gradients(
        self, stats: GaussianStatistics | ZStatistics | XYStatistics
    ) -> tuple[torch.Tensor, list[tuple[nn.Parameter, torch.Tensor]]] | None:
        """On ``XYStatistics``, and on ``ZStatistics`` without the query's own term: the loss
        and the gradients of W_K, W_Q, W_V and h from the same arithmetic as
        ``statistics_loss``, without autograd (about half the time of a training step's
        update here); None otherwise."""
        hand = self._hand_worked_loss(stats)
        if hand is None:
            return None
        compute, data = hand
        weights = self._weights()
        loss, grads = without_autograd(compute, weights, *data)
        return loss, list(zip(weights, grads, strict=True))

    def _weights(self) -> tuple[nn.Parameter, nn.Parameter, nn.Parameter, nn.Parameter]:
        return self.W_K, self.W_Q, self.W_V, self.h

    def _hand_worked_loss(self, stats: GaussianStatistics | ZStatistics | XYStatistics
                          ) -> Any:
        if isinstance(stats, XYStatistics):
            self._require_nuisance_free()        # u_x = 0: the query's own term is 0 too
        return hand_worked_loss(stats, self.W_K.dtype, self.options.normalise,
                                self.options.attend_query)

    def _require_nuisance_free(self) -> None:
        if not getattr(self, "_nuisance_free", False):
            raise ConfigError("XYStatistics need the model held at u_x = 0 and m_y = 0 (the "
                              "gd-subspace start on a family with a nuisance-free optimum)")
