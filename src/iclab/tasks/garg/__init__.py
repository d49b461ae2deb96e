"""Garg et al.'s curriculum (the effective d and n grow during training) and their input
shifts of a linear Gaussian law, which the core's training and shift evaluation use; their
function classes are the ``garg`` study's (``iclab.studies.garg``)."""

from iclab.tasks.garg.curriculum import (
    Curriculum,
    curriculum_prompts,
    make_curriculum,
    supports_curriculum,
)

__all__ = ["Curriculum", "curriculum_prompts", "make_curriculum", "supports_curriculum"]
