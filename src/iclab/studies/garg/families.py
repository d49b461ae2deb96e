"""Garg et al.'s function classes (NeurIPS 2022, arXiv 2208.01066): x ~ N(0, I) and one f per
prompt drawn from

- ``SparseLinearTask`` (``sparse-linear``): f(x) = w^T x, w has ``sparsity`` = s nonzero
  coordinates (the support uniform among the s-subsets of {1..d}), those N(0, 1) (s = 3 by
  default, as the paper's d = 20 experiments, or d where d < 3);
- ``DecisionTreeTask`` (``decision-tree``): a full binary tree of depth ``tree_depth`` (4 by
  default); each internal node tests one coordinate, chosen uniformly and independently among
  the d, against the threshold 0 (x_j > 0 goes right), and each of the 2^depth leaves holds a
  value N(0, 1);
- ``ReluNetworkTask`` (``relu-network``): f(x) = sqrt(2 / m) sum_j a_j relu(v_j^T x) with
  width m = ``network_width`` (100 by default), v_j ~ N(0, I_d), a_j ~ N(0, 1) (the paper's
  scaling, which makes E f(x)^2 = E ||x||^2 = d, the linear task's scale).

Labels are y = f(x) + sigma * eps. Each family writes its law once, in ``draw_values``, which
evaluates a freshly drawn f on any inputs (so the curriculum, ``iclab.config.curriculum``,
can evaluate it on inputs whose last coordinates are zero). Each names its own baselines
(``baselines``: factories of ``iclab.studies.garg.fitted``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from iclab.studies.garg.fitted import (
    boosted_trees_baseline,
    lasso_baseline,
    relu_network_baseline,
)
from iclab.tasks.base import check_scalars
from iclab.tasks.nonlinear import DrawnTask
from iclab.utils.errors import ConfigError

DEFAULT_SPARSITY = 3
DEFAULT_TREE_DEPTH = 4
DEFAULT_NETWORK_WIDTH = 100
MAX_TREE_DEPTH = 16
"""2^16 leaves per prompt: beyond it a batch of trees outgrows any reasonable memory."""


def _check_positive_int(name: str, value: object, maximum: int | None = None) -> None:
    bad = isinstance(value, bool) or not isinstance(value, int) or value < 1 \
        or (maximum is not None and value > maximum)
    if bad:
        upper = f" and <= {maximum}" if maximum is not None else ""
        raise ConfigError(f"{name} must be an integer >= 1{upper}, got {value!r}")


@dataclass(frozen=True)
class SparseLinearTask(DrawnTask):
    """f(x) = w^T x, w with ``sparsity`` nonzero N(0, 1) coordinates on a uniform support."""

    d: int
    n: int
    sigma: float
    sparsity: int | None = None
    """s, 1..d; None: 3 (``DEFAULT_SPARSITY``), or d where d < 3."""

    name = "sparse-linear"
    rotation_invariant = False      # the support is in the coordinate axes
    sign_symmetric = True           # w -> -w keeps the law
    baselines = (lasso_baseline,)

    def __post_init__(self) -> None:
        check_scalars(self.d, self.n, self.sigma)
        if self.sparsity is None:
            object.__setattr__(self, "sparsity", min(DEFAULT_SPARSITY, self.d))
        _check_positive_int("sparsity", self.sparsity, self.d)

    def draw_weights(self, batch: int, generator: torch.Generator,
                     dtype: torch.dtype = torch.float64) -> torch.Tensor:
        """One w per row: (B, d), ``sparsity`` nonzero coordinates each."""
        device = generator.device
        w = torch.randn(batch, self.d, generator=generator, dtype=dtype, device=device)
        order = torch.rand(batch, self.d, generator=generator, device=device).argsort(dim=1)
        keep = torch.zeros(batch, self.d, dtype=torch.bool, device=device)
        keep.scatter_(1, order[:, :int(self.sparsity or 0)], True)     # a uniform s-subset per row
        return w * keep

    def draw_values(self, inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """inputs: (B, k, d) -> w^T x for one sparse w per row: (B, k)."""
        w = self.draw_weights(inputs.shape[0], generator, inputs.dtype)
        return torch.einsum("bkd,bd->bk", inputs, w)


@dataclass(frozen=True)
class DecisionTreeTask(DrawnTask):
    """A depth-``tree_depth`` tree: node tests x_j > 0 (j uniform), leaves N(0, 1)."""

    d: int
    n: int
    sigma: float
    tree_depth: int = DEFAULT_TREE_DEPTH

    name = "decision-tree"
    rotation_invariant = False
    sign_symmetric = True           # leaves -> -leaves keeps the law
    baselines = (boosted_trees_baseline,)

    def __post_init__(self) -> None:
        check_scalars(self.d, self.n, self.sigma)
        _check_positive_int("tree_depth", self.tree_depth, MAX_TREE_DEPTH)

    def draw_trees(self, batch: int, generator: torch.Generator,
                   dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
        """One tree per row: the coordinate each internal node tests (B, 2^depth - 1), nodes
        in breadth-first order (node i's children are 2i+1 and 2i+2), and the leaf values
        (B, 2^depth), left to right."""
        device = generator.device
        internal = 2 ** self.tree_depth - 1
        features = torch.randint(0, self.d, (batch, internal), generator=generator,
                                 device=device)
        leaves = torch.randn(batch, internal + 1, generator=generator, dtype=dtype,
                             device=device)
        return features, leaves

    def draw_values(self, inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """inputs: (B, k, d) -> the value of one tree per row at each input: (B, k)."""
        batch, k, _ = inputs.shape
        features, leaves = self.draw_trees(batch, generator, inputs.dtype)
        node = torch.zeros(batch, k, dtype=torch.long, device=inputs.device)
        for _ in range(self.tree_depth):
            coordinate = features.gather(1, node)                          # (B, k)
            right = inputs.gather(2, coordinate[..., None]).squeeze(-1) > 0
            node = 2 * node + 1 + right.long()
        return leaves.gather(1, node - features.shape[1])


@dataclass(frozen=True)
class ReluNetworkTask(DrawnTask):
    """f(x) = sqrt(2/m) a^T relu(V x): V (m, d) and a (m,) with N(0, 1) entries."""

    d: int
    n: int
    sigma: float
    network_width: int = DEFAULT_NETWORK_WIDTH

    name = "relu-network"
    rotation_invariant = True       # V R has the law of V for every rotation R
    sign_symmetric = True           # a -> -a keeps the law
    baselines = (relu_network_baseline,)

    def __post_init__(self) -> None:
        check_scalars(self.d, self.n, self.sigma)
        _check_positive_int("network_width", self.network_width, 100_000)

    def gd_moments(self) -> tuple[float, float, float]:
        """(G, A, B) = (d/2, d, d (d+2)) for every width: f is sqrt(2d) times the
        ``two-layer-relu`` network (V = sqrt(d) W), whose moments are relu's (1/4, 1/2,
        (d+2)/2), docs/theory.md section 5.4."""
        d = self.d
        return d / 2, float(d), float(d * (d + 2))

    def draw_network(self, batch: int, generator: torch.Generator,
                     dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
        """One network per row: V (B, m, d) and a (B, m)."""
        device = generator.device
        V = torch.randn(batch, self.network_width, self.d, generator=generator, dtype=dtype,
                        device=device)
        a = torch.randn(batch, self.network_width, generator=generator, dtype=dtype,
                        device=device)
        return V, a

    def draw_values(self, inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """inputs: (B, k, d) -> sqrt(2/m) a^T relu(V x) for one (V, a) per row: (B, k)."""
        V, a = self.draw_network(inputs.shape[0], generator, inputs.dtype)
        hidden = torch.relu(inputs @ V.transpose(1, 2))                    # (B, k, m)
        return (hidden @ a[..., None]).squeeze(-1) * math.sqrt(2.0 / self.network_width)
