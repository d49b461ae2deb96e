"""Reading the learned algorithm off a model and comparing models with algorithms."""

from iclab.analysis.compare import (
    Predictor,
    input_sensitivity_cosine,
    mean_abs_prediction_difference,
)
from iclab.analysis.readout import (
    NuisanceShares,
    gamma_relative_error,
    nuisance_shares,
    read_algorithm,
)

__all__ = [
    "NuisanceShares",
    "Predictor",
    "gamma_relative_error",
    "input_sensitivity_cosine",
    "mean_abs_prediction_difference",
    "nuisance_shares",
    "read_algorithm",
]
