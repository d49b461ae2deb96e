"""The best L-step preconditioned GD, w_(l+1) = w_l + A_l X^T (y - X w_l), by Monte Carlo.

From w_0 = 0 the steps give w_L = M_L X^T y with M_0 = 0 and M_(l+1) = M_l + A_l (I - S M_l),
S = X^T X. The matrices need not commute, so their order matters (reported in the order they
are applied). The mean loss over a fixed fit sample (``iclab.theory.depth.multistep_mc``) is
minimised over the L d^2 entries by L-BFGS, in units A_l * scale = O(1): every start first
on a subsample, the best end points then polished on the whole sample. Gaussian samples are
searched in coordinates where Sigma_x = I and Sigma_w is diagonal, where a prompt's loss costs
one batched matrix product (``GaussianSample.canonical``).

The loss is not convex in the A_l and has several local minima. ``multistep_optimum`` starts
from its best plain steps (A_l = eta_l I) and, for linear Gaussian tasks, from A_l = eta_l
Sigma_x^{-1} with the exact best steps of plain GD on the whitened inputs Sigma_x^{-1/2} x
(Ahn et al.'s stationary points in Theorem 2's setting Sigma_w = Sigma_x^{-1}), each with the
steps in increasing and in decreasing order: the order matters, and large steps first has
ended lower in the cases tried.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from iclab.theory.depth.multistep_mc import MatrixSample
from iclab.theory.depth.step_search import lbfgs_minimise

LBFGS_ITERATIONS = 200
POLISH_ITERATIONS = 100
SCREEN_PROMPTS = 4_000
POLISHED = 2
POLISH_TOLERANCE = 1e-6
"""Polishing stops once 5 iterations gain less than this, relatively: far below the
evaluation sample's standard error."""


def preconditioned_matrices(A: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """A: (L, d, d) preconditioners in the order applied, S: (N, d, d) -> M_L: (N, d, d)."""
    eye = torch.eye(S.shape[-1], dtype=S.dtype)
    M = torch.zeros_like(S)
    for A_l in A:
        M = M + A_l @ (eye - S @ M)
    return M


def _mean_loss(sample: MatrixSample, A: torch.Tensor) -> torch.Tensor:
    return sample.losses(preconditioned_matrices(A, sample.S)).mean()


def _lbfgs(sample: MatrixSample, start: torch.Tensor, scale: float, iterations: int,
           tolerance: float) -> torch.Tensor:
    """L-BFGS on the mean loss over the sample, in units A * scale."""
    B = lbfgs_minimise(lambda B: _mean_loss(sample, B / scale), start * scale, iterations,
                       tolerance=tolerance)
    return B / scale


def fit_preconditioners(
    sample: MatrixSample, starts: Sequence[torch.Tensor], scale: float
) -> tuple[torch.Tensor, float]:
    """The best (A: (L, d, d), mean fit loss) over L-BFGS runs from ``starts``: each start is
    run on the first ``SCREEN_PROMPTS`` prompts, the ``POLISHED`` best end points are then
    polished on the whole sample. The search runs in the sample's canonical coordinates
    (A'' = T^T A T)."""
    if not starts:
        raise ValueError("no starting preconditioners given")
    canonical, T = sample.canonical()
    inverse = torch.linalg.inv(T)
    head = canonical.head(SCREEN_PROMPTS)
    screened = []
    for start in starts:
        A = _lbfgs(head, T.T @ start @ T, scale, LBFGS_ITERATIONS, 1e-8)
        with torch.no_grad():
            screened.append((float(_mean_loss(head, A)), A))
    screened.sort(key=lambda pair: pair[0])
    best: tuple[torch.Tensor, float] | None = None
    for _, A in screened[:POLISHED]:
        A = _lbfgs(canonical, A, scale, POLISH_ITERATIONS, POLISH_TOLERANCE)
        with torch.no_grad():
            value = float(_mean_loss(canonical, A))
        if best is None or value < best[1]:
            best = (inverse.T @ A @ inverse, value)
    assert best is not None
    return best
