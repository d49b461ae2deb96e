"""What the mathematics says the optimal one-layer LSA and the optimal L-step GD are."""

from iclab.theory.depth.multistep import MultiStepOptimum, multistep_optimum
from iclab.theory.depth.wishart_moments import wishart_moment, wishart_trace_moments
from iclab.theory.gaussian import (
    GaussianOptimum,
    eta_star_isotropic,
    gaussian_optimum,
    gd_term_loss,
    loss_star_isotropic,
)

__all__ = [
    "GaussianOptimum",
    "MultiStepOptimum",
    "eta_star_isotropic",
    "gaussian_optimum",
    "gd_term_loss",
    "loss_star_isotropic",
    "multistep_optimum",
    "wishart_moment",
    "wishart_trace_moments",
]
