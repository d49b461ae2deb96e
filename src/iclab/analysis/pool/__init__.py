"""The evaluation of a run trained on a finite task pool (docs/theory.md section 15)."""

from iclab.analysis.pool.evaluate import evaluate_pool

__all__ = ["evaluate_pool"]
