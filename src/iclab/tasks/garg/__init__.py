"""Garg et al.'s function classes (sparse linear, decision trees, two-layer ReLU networks) and
their curriculum; registered as built-in families in ``iclab.tasks.registry``."""

from iclab.tasks.garg.curriculum import (
    Curriculum,
    curriculum_prompts,
    make_curriculum,
    supports_curriculum,
)
from iclab.tasks.garg.families import DecisionTreeTask, ReluNetworkTask, SparseLinearTask

__all__ = [
    "Curriculum",
    "DecisionTreeTask",
    "ReluNetworkTask",
    "SparseLinearTask",
    "curriculum_prompts",
    "make_curriculum",
    "supports_curriculum",
]
