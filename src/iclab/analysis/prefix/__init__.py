"""Prefix curves: a model's error at every number of in-context examples k = 0..n, beside
baselines on the same prompts and the exact curves where they exist."""
