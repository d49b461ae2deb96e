"""The development study: a model's checkpoints against the exact predictors (study.py)."""
