"""What a sequence model's prediction is as an algorithm: weighted preconditioned GD.

The part of yhat linear (odd) in the labels is sum_i y_i x_q^T Gamma_i x_i, one preconditioner
per position (``position_gammas``: (n, d, d)). Where Gamma_i = omega_i Gamma this is WPGD with
sample weights omega_1..omega_n; ``weighted_readout`` fits that form by the best rank-one
factorisation of the stack (its relative residual says how far the model is from it, 0 when
exact) and scales omega to sum to n (uniform weights are all 1, Gamma then the LSA's).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class WeightedReadout:
    """omega: (n,), sum n; gamma: (d, d); residual: ||stack - omega x Gamma|| / ||stack||;
    complete: the model's odd part in y is exactly this stack (no other linear term)."""

    omega: np.ndarray
    gamma: np.ndarray
    residual: float
    complete: bool = True


def weighted_readout(position_gammas: np.ndarray, complete: bool = True) -> WeightedReadout:
    """The WPGD read-out of a stack Gamma_i: (n, d, d), float64."""
    stack = np.asarray(position_gammas, dtype=np.float64)
    n, d = stack.shape[0], stack.shape[1]
    flat = stack.reshape(n, d * d)
    norm = float(np.linalg.norm(flat))
    if norm == 0:
        return WeightedReadout(np.ones(n), np.zeros((d, d)), 0.0, complete)
    left, values, right = np.linalg.svd(flat, full_matrices=False)
    omega, gamma = left[:, 0] * values[0], right[0].reshape(d, d)
    total = float(omega.sum())
    scale = n / total if total != 0 else 1.0
    residual = float(np.linalg.norm(flat - np.outer(omega, right[0]))) / norm
    return WeightedReadout(omega * scale, gamma / scale, residual, complete)
