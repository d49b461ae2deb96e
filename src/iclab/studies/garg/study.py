"""The ``garg`` study: Garg et al.'s function classes (NeurIPS 2022) as task families
(``families``: sparse linear, decision trees, two-layer ReLU networks), each with its own
fitted baselines (``fitted``). Its one declaration, ``STUDY``, is listed under the
``iclab.studies`` entry points like a user's installed study."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from iclab.studies.garg.families import (
    DEFAULT_NETWORK_WIDTH,
    DEFAULT_SPARSITY,
    DEFAULT_TREE_DEPTH,
    DecisionTreeTask,
    ReluNetworkTask,
    SparseLinearTask,
)
from iclab.tasks.base import TaskFamily
from iclab.tasks.family_entry import FamilyEntry
from iclab.utils.fields import setting
from iclab.utils.studies import Study


@dataclass(frozen=True)
class SparseLinearOptions:
    """The option of ``sparse-linear``."""

    sparsity: int | None = setting(
        None, f"Nonzero coordinates s of w, 1..d (sparse-linear only) [default: "
        f"{DEFAULT_SPARSITY}].", minimum=1, maximum=4096, omit_default=True)


@dataclass(frozen=True)
class DecisionTreeOptions:
    """The option of ``decision-tree``."""

    tree_depth: int | None = setting(
        None, f"Depth of the random trees (decision-tree only) [default: "
        f"{DEFAULT_TREE_DEPTH}].", minimum=1, maximum=16, omit_default=True)


@dataclass(frozen=True)
class ReluNetworkOptions:
    """The option of ``relu-network``."""

    network_width: int | None = setting(
        None, f"Hidden width m of the random networks (relu-network only) [default: "
        f"{DEFAULT_NETWORK_WIDTH}].", minimum=1, maximum=100_000, omit_default=True)


def _given(options: Any) -> dict[str, Any]:
    """The options that are set (None: the family's own default)."""
    return {key: value for key, value in vars(options).items() if value is not None}


def garg_families() -> tuple[FamilyEntry, ...]:
    """The three families, with their options and one-line descriptions."""
    def sparse(d: int, n: int, sigma: float, options: SparseLinearOptions) -> TaskFamily:
        return SparseLinearTask(d, n, sigma, **_given(options))

    def tree(d: int, n: int, sigma: float, options: DecisionTreeOptions) -> TaskFamily:
        return DecisionTreeTask(d, n, sigma, **_given(options))

    def network(d: int, n: int, sigma: float, options: ReluNetworkOptions) -> TaskFamily:
        return ReluNetworkTask(d, n, sigma, **_given(options))

    return (
        FamilyEntry("sparse-linear", sparse,
                    "Garg et al.: x ~ N(0, I), f(x) = w^T x, s of d coordinates of w nonzero, "
                    "N(0, 1)", SparseLinearOptions),
        FamilyEntry("decision-tree", tree,
                    "Garg et al.: x ~ N(0, I), f a random tree: nodes test x_j > 0 (j "
                    "uniform), leaves N(0, 1)", DecisionTreeOptions),
        FamilyEntry("relu-network", network,
                    "Garg et al.: x ~ N(0, I), f(x) = sqrt(2/m) a^T relu(V x), V, a "
                    "N(0, 1) entries", ReluNetworkOptions),
    )


STUDY = Study(
    "garg",
    "Garg et al.'s function classes (sparse linear, decision trees, ReLU networks) with "
    "their own baselines",
    families=garg_families,
)
