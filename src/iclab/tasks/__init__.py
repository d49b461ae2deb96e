"""Task distributions: seeded batches of in-context regression prompts."""

from iclab.tasks.base import Prompts, TaskFamily
from iclab.tasks.covariance import load_covariance, validate_covariance
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.batches import GaussianStatistics

__all__ = [
    "GaussianStatistics",
    "LinearGaussian",
    "Prompts",
    "TaskFamily",
    "load_covariance",
    "validate_covariance",
]
