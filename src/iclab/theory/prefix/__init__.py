"""Exact prefix curves: the expected error of in-context baselines at every context length."""
