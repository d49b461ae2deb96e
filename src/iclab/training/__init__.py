"""Fitting a model to a task family's objective: the loop, the objective, the optimisers and
checkpoints. Imports nothing of analysis, theory, experiments or the CLI."""

from iclab.training.loop import TrainedModel, TrainingDivergedError, fit

__all__ = ["TrainedModel", "TrainingDivergedError", "fit"]
