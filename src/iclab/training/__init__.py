"""Training a one-layer LSA on fresh prompts, with checkpoints, metrics and a result file."""

from iclab.training.config import TrainConfig
from iclab.training.loop import TrainingDivergedError, train

__all__ = ["TrainConfig", "TrainingDivergedError", "train"]
