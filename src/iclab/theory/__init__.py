"""What the mathematics says the optimal one-layer LSA is, in float64."""

from iclab.theory.gaussian import (
    GaussianOptimum,
    eta_star_isotropic,
    gaussian_optimum,
    gd_term_loss,
    loss_star_isotropic,
)

__all__ = [
    "GaussianOptimum",
    "eta_star_isotropic",
    "gaussian_optimum",
    "gd_term_loss",
    "loss_star_isotropic",
]
