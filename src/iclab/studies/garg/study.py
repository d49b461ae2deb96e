"""The ``garg`` study: Garg et al.'s function classes (NeurIPS 2022) as task families
(``families``: sparse linear, decision trees, two-layer ReLU networks), each with its own
fitted baselines (``fitted``). Its one declaration, ``STUDY``, is listed under the
``iclab.studies`` entry points like a user's installed study."""

from __future__ import annotations

from iclab.studies.garg.families import (
    DEFAULT_NETWORK_WIDTH,
    DEFAULT_SPARSITY,
    DEFAULT_TREE_DEPTH,
    DecisionTreeTask,
    ReluNetworkTask,
    SparseLinearTask,
)
from iclab.tasks.registry import FamilyEntry
from iclab.utils.studies import Study


def garg_families() -> tuple[FamilyEntry, ...]:
    """The three families, with their parameters and one-line descriptions."""
    return (
        FamilyEntry("sparse-linear", SparseLinearTask,
                    "Garg et al.: x ~ N(0, I), f(x) = w^T x, s of d coordinates of w nonzero, "
                    "N(0, 1)", {"sparsity": f"nonzero coordinates s, 1..d (default "
                                            f"{DEFAULT_SPARSITY}, or d if d < 3)"}),
        FamilyEntry("decision-tree", DecisionTreeTask,
                    "Garg et al.: x ~ N(0, I), f a random tree: nodes test x_j > 0 (j "
                    "uniform), leaves N(0, 1)", {"tree_depth": f"tree depth >= 1 (default "
                                                              f"{DEFAULT_TREE_DEPTH})"}),
        FamilyEntry("relu-network", ReluNetworkTask,
                    "Garg et al.: x ~ N(0, I), f(x) = sqrt(2/m) a^T relu(V x), V, a "
                    "N(0, 1) entries", {"network_width": f"hidden width m >= 1 (default "
                                                          f"{DEFAULT_NETWORK_WIDTH})"}),
    )


STUDY = Study(
    "garg",
    "Garg et al.'s function classes (sparse linear, decision trees, ReLU networks) with "
    "their own baselines",
    families=garg_families,
)
