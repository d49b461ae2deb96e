"""The best L-step preconditioned GD, w_(l+1) = w_l + A_l X^T (y - X w_l), by Monte Carlo.

From w_0 = 0 the steps give w_L = M_L X^T y with M_0 = 0 and M_(l+1) = M_l + A_l (I - S M_l),
S = X^T X. The matrices need not commute, so their order matters (reported in the order they
are applied). The mean loss over a fixed fit sample (``iclab.theory.multistep_mc``) is
minimised over the L d^2 entries with L-BFGS from given starts (each first on a
subsample, the best then polished on the whole sample),
in units A_l * scale = O(1); the best end point wins.

Where the loss is known exactly for a family of preconditioners it seeds the search: for a
linear Gaussian task, A_l = eta_l Sigma_x^{-1} is plain GD on the whitened inputs
Sigma_x^{-1/2} x, whose loss is exact (``iclab.theory.polynomial_exact``); in Theorem 2's
setting (Sigma_w = Sigma_x^{-1}) these are Ahn et al.'s stationary points.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from iclab.theory.multistep_mc import MatrixSample
from iclab.theory.step_search import lbfgs_minimise

LBFGS_ITERATIONS = 300
POLISH_ITERATIONS = 60
SCREEN_PROMPTS = 4_000


def preconditioned_matrices(A: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """A: (L, d, d) preconditioners in the order applied, S: (N, d, d) -> M_L: (N, d, d)."""
    eye = torch.eye(S.shape[-1], dtype=S.dtype)
    M = torch.zeros_like(S)
    for A_l in A:
        M = M + A_l @ (eye - S @ M)
    return M


def _mean_loss(sample: MatrixSample, A: torch.Tensor) -> torch.Tensor:
    return sample.losses(preconditioned_matrices(A, sample.S)).mean()


def _lbfgs(sample: MatrixSample, start: torch.Tensor, scale: float, iterations: int
           ) -> torch.Tensor:
    """L-BFGS on the mean loss over the sample, in units A * scale."""
    B = lbfgs_minimise(lambda B: _mean_loss(sample, B / scale), start * scale, iterations)
    return B / scale


def fit_preconditioners(
    sample: MatrixSample, starts: Sequence[torch.Tensor], scale: float
) -> tuple[torch.Tensor, float]:
    """The best (A: (L, d, d), mean fit loss) over L-BFGS runs from ``starts``: each start is
    run on the first ``SCREEN_PROMPTS`` prompts, the best end point polished on all."""
    head = sample.head(SCREEN_PROMPTS)
    best: tuple[torch.Tensor, float] | None = None
    for start in starts:
        A = _lbfgs(head, start, scale, LBFGS_ITERATIONS)
        with torch.no_grad():
            value = float(_mean_loss(head, A))
        if best is None or value < best[1]:
            best = (A, value)
    if best is None:
        raise ValueError("no starting preconditioners given")
    A = _lbfgs(sample, best[0], scale, POLISH_ITERATIONS)
    with torch.no_grad():
        return A, float(_mean_loss(sample, A))
