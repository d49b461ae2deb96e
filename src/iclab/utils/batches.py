"""What a model reads: a batch of whole prompts, or a batch of their sufficient statistics.

A neutral module: task families produce these batches (``iclab.tasks``) and models consume
them (``iclab.models``), and neither package imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import torch


@dataclass(frozen=True)
class Prompts:
    """A batch of prompts.

    X: (B, n, d) in-context inputs; y: (B, n) their labels;
    x_q: (B, d) queries; y_q: (B,) the queries' labels.
    """

    X: torch.Tensor
    y: torch.Tensor
    x_q: torch.Tensor
    y_q: torch.Tensor

    @property
    def batch(self) -> int:
        return int(self.X.shape[0])

    @property
    def n(self) -> int:
        return int(self.X.shape[1])

    @property
    def d(self) -> int:
        return int(self.X.shape[2])

    @staticmethod
    def from_batch_inner(inputs: torch.Tensor, labels: torch.Tensor) -> Prompts:
        """Prompts as views of ``inputs`` (d, n+1, B) and ``labels`` (n+1, B), the query last.

        Samplers that draw with the batch axis innermost (contiguous) hand out these views
        instead of copies; shapes are as always, strides are not those of a contiguous tensor.
        """
        n = inputs.shape[1] - 1
        return Prompts(X=inputs[:, :n].permute(2, 1, 0), y=labels[:n].T, x_q=inputs[:, n].T,
                       y_q=labels[n])

    def to(self, dtype: torch.dtype) -> Prompts:
        """The same prompts in another floating-point type."""
        return Prompts(self.X.to(dtype), self.y.to(dtype), self.x_q.to(dtype), self.y_q.to(dtype))


@dataclass(frozen=True)
class ZStatistics:
    """A batch of linear Gaussian prompts reduced to what any depth of LSA reads.

    Z: (B, d+1, d+1) sum over the n context tokens of e_i e_i^T; x_q: (B, d) queries;
    y_q: (B,) the queries' labels; n: the number of context tokens.
    """

    Z: torch.Tensor
    x_q: torch.Tensor
    y_q: torch.Tensor
    n: int

    @property
    def batch(self) -> int:
        return int(self.Z.shape[0])


@dataclass(frozen=True)
class XYStatistics:
    """A batch of prompts reduced to what a one-layer LSA without nuisance terms reads.

    With u_x = 0 and m_y = 0 (the nuisance-free optimum of rotation-invariant or sign-symmetric
    families) the prediction u^T Z M x_q is u_y (X^T y)^T M_x x_q: it needs only
    xy: (B, d) the sums X^T y = sum_i y_i x_i; x_q: (B, d); y_q: (B,); n.
    """

    xy: torch.Tensor
    x_q: torch.Tensor
    y_q: torch.Tensor
    n: int

    @property
    def batch(self) -> int:
        return int(self.xy.shape[0])


@dataclass(frozen=True)
class GaussianStatistics:
    """Everything a one-layer LSA prediction needs from a batch of linear Gaussian prompts.

    w: (B, d) task vectors; x_q: (B, d) queries; y_q: (B,) query labels;
    chi2: (B,) the Bartlett c1^2 ~ chi2_n; z: (B,) the Bartlett off-diagonal ~ N(0, 1);
    chol_x: (d, d) lower Cholesky factor of Sigma_x (None for the identity); sigma, n: scalars.
    See ``iclab.tasks.linear_gaussian`` for the law.
    """

    w: torch.Tensor
    x_q: torch.Tensor
    y_q: torch.Tensor
    chi2: torch.Tensor
    z: torch.Tensor
    chol_x: torch.Tensor | None
    sigma: float
    n: int


STATISTICS_SAMPLERS = {"bartlett": "sample_statistics", "wishart": "sample_z_statistics",
                       "xy": "sample_xy_statistics"}
"""Kind of sufficient statistics -> the family method that draws a batch of them:
"bartlett" -> ``GaussianStatistics``, "wishart" -> ``ZStatistics``, "xy" -> ``XYStatistics``."""


class ReadsStatistics(Protocol):
    """What is asked of a model class or instance about statistics, as
    ``iclab.models.base.Model`` declares it."""

    @property
    def has_statistics(self) -> bool: ...
    @property
    def statistics_kind(self) -> str: ...
    @property
    def statistics_kinds(self) -> tuple[str, ...]: ...


class DrawsStatistics(Protocol):
    """What is asked of a family about statistics, as ``iclab.tasks.base.TaskFamily``
    declares it."""

    @property
    def statistics(self) -> bool: ...
    @property
    def statistics_kinds(self) -> tuple[str, ...]: ...


def statistics_kinds_read(model: ReadsStatistics) -> tuple[str, ...]:
    """The kinds of statistics a model (class or instance) reads, in its order of preference:
    its ``statistics_kinds`` where it lists them, else its one ``statistics_kind``; () for a
    model without ``has_statistics``."""
    if not model.has_statistics:
        return ()
    return tuple(model.statistics_kinds) or (str(model.statistics_kind),)


def shared_statistics_kind(family: DrawsStatistics, model: Any) -> str | None:
    """The first kind of statistics the model (a ``Model`` class or instance) reads that the
    family can draw, or None.

    A family declares ``statistics`` and the kinds it draws in ``statistics_kinds`` ("bartlett"
    alone by default). A model instance may read more kinds in its present state than its
    class declares (``statistics_kinds_now()``: the one-layer ``lsa`` held nuisance-free also
    reads "xy")."""
    if not family.statistics:
        return None
    read = statistics_kinds_read(model)
    if read and not isinstance(model, type):
        read = tuple(model.statistics_kinds_now())
    return next((kind for kind in read if kind in family.statistics_kinds), None)
