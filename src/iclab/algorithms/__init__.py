"""In-context regression algorithms that models are compared with, behind one interface."""

from iclab.algorithms.base import InContextAlgorithm, InContextPredictor
from iclab.algorithms.baselines import (
    BayesPosteriorMean,
    GDPlusPlus,
    KStepGD,
    LeastSquares,
    PreconditionedKStepGD,
    Ridge,
    ZeroPredictor,
)
from iclab.algorithms.construct import lsa_from_gamma
from iclab.algorithms.gd import OneStepGD, PreconditionedGD

__all__ = [
    "BayesPosteriorMean",
    "GDPlusPlus",
    "InContextAlgorithm",
    "InContextPredictor",
    "KStepGD",
    "LeastSquares",
    "OneStepGD",
    "PreconditionedGD",
    "PreconditionedKStepGD",
    "Ridge",
    "ZeroPredictor",
    "lsa_from_gamma",
]
