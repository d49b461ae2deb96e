"""What a model reads: a batch of whole prompts, or a batch of their sufficient statistics.

A neutral module: task families produce these batches (``iclab.tasks``) and models consume
them (``iclab.models``), and neither package imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def statistics_kinds_read(model: object) -> tuple[str, ...]:
    """The kinds of statistics a model (class or instance) reads, in its order of preference:
    its ``statistics_kinds`` where declared, else its one ``statistics_kind``; () for a model
    without ``has_statistics``."""
    if not getattr(model, "has_statistics", False):
        return ()
    kinds: tuple[str, ...] = tuple(getattr(model, "statistics_kinds", ()))
    return kinds or (str(getattr(model, "statistics_kind", "bartlett")),)


def shared_statistics_kind(family: object, model: object) -> str | None:
    """The first kind of statistics the model reads that the family can draw, or None.

    A family declares ``statistics`` and the kinds it draws in ``statistics_kinds`` (a family
    without that list draws "bartlett" statistics only). A model instance may read more kinds
    in its present state than its class declares (``statistics_kinds_now()``: the one-layer
    ``lsa`` held nuisance-free also reads "xy")."""
    if not getattr(family, "statistics", False):
        return None
    drawn = tuple(getattr(family, "statistics_kinds", ("bartlett",)))
    now = getattr(model, "statistics_kinds_now", None)
    read = statistics_kinds_read(model)
    if now is not None and not isinstance(model, type) and read:
        read = tuple(now())
    return next((kind for kind in read if kind in drawn), None)
