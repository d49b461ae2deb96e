"""A direct least-squares fit of Gamma on prompts (not a test module).

Regress y_q on the d^2 features x_q,a (X^T y)_b: the coefficients are the Gamma minimising
the sample mean of (x_q^T Gamma X^T y - y_q)^2, with sandwich standard errors. An estimate of
the optimal Gamma that uses nothing of the theory.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from iclab.tasks.base import Prompts, TaskFamily
from iclab.utils.seeding import make_generator


def gd_features(p: Prompts) -> torch.Tensor:
    """x_q,a v_b with v = X^T y: (B, d^2), column a * d + b."""
    v = torch.einsum("bkd,bk->bd", p.X, p.y)
    return (p.x_q[:, :, None] * v[:, None, :]).flatten(1)


def fit_gamma(
    task: TaskFamily, prompts: int, seed: int = 0, chunk: int = 50_000
) -> tuple[np.ndarray, np.ndarray]:
    """(Gamma, its standard errors): both (d, d), from ``prompts`` float64 prompts."""
    d = task.d
    H = torch.zeros(d * d, d * d, dtype=torch.float64)
    g = torch.zeros(d * d, dtype=torch.float64)
    batches = []
    for index, start in enumerate(range(0, prompts, chunk)):
        size = min(chunk, prompts - start)
        p = task.sample_prompts(size, make_generator(seed, "gamma-fit", index), torch.float64)
        F = gd_features(p)
        H += F.T @ F
        g += F.T @ p.y_q
        batches.append((F, p.y_q))
    theta = torch.linalg.solve(H, g)
    meat = torch.zeros_like(H)
    for F, y in batches:
        residual = y - F @ theta
        meat += F.T @ (F * residual[:, None] ** 2)
    H_inv = torch.linalg.inv(H)
    cov = H_inv @ meat @ H_inv
    se = torch.sqrt(torch.diagonal(cov)).reshape(d, d)
    return theta.reshape(d, d).numpy(), se.numpy()


def mc_loss(task: TaskFamily, gamma: np.ndarray, prompts: int, seed: int = 0) -> tuple[float,
                                                                                          float]:
    """The mean of (x_q^T Gamma X^T y - y_q)^2 over ``prompts`` prompts and its standard error."""
    p = task.sample_prompts(prompts, make_generator(seed, "mc-loss"), torch.float64)
    prediction = gd_features(p) @ torch.as_tensor(gamma).reshape(-1)
    squares = (prediction - p.y_q) ** 2
    return float(squares.mean()), float(squares.std()) / math.sqrt(prompts)
