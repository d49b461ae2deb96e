"""A run, end to end: validate, train, evaluate, read out, judge, write result.json.

``training`` only fits a model; this package composes it with the evaluation (``analysis``)
and the theory into the run folder a researcher keeps.
"""

from iclab.runs.folder import CONFIG, RESULT, read_finished_run
from iclab.runs.pipeline import run_training

__all__ = ["CONFIG", "RESULT", "read_finished_run", "run_training"]
