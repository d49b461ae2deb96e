"""The optimal one-step GD for rotation-invariant task families (docs/theory.md section 5).

With x ~ N(0, I) and a rotation-invariant law of f, the optimal LSA is one step of plain GD,
yhat = eta x_q^T X^T y, with

    eta = G / (B + sigma^2 d + (n - 1) G),     L* = A + sigma^2 - n eta G,

where, averaging over f, G = E||g_f||^2 with g_f = E_x[f(x) x], A = E[f(x)^2] and
B = E[f(x)^2 ||x||^2]. (Given f, v = X^T y has E[v] = n g_f, E||v||^2 = n (B_f + sigma^2 d)
+ n (n-1) ||g_f||^2 and E[y_q x_q^T v] = n ||g_f||^2.)

- relu(u^T x), u uniform on the sphere: g_f = u/2, so G = 1/4, A = 1/2, B = (d+2)/2 and
  eta = 1 / (n + 2d + 3 + 4 sigma^2 d).
- Two-layer relu a^T relu(W x)/sqrt(m): per network g_f = W^T a / (2 sqrt m) and
  A_f = a^T K a / m with the arc-cosine kernel K_jk = E_x[relu(w_j.x) relu(w_k.x)]
  = |w_j||w_k| (sin t + (pi - t) cos t) / (2 pi), t the angle between w_j and w_k. Every
  positively 1-homogeneous f has B_f = (d+2) A_f (E[r^4]/E[r^2] = d+2 for r = ||x||). Averaging
  over W_jk ~ N(0, 1/d), a ~ N(0, I) gives G = 1/4 and A = 1/2 exactly, the same moments (and
  eta, L*) as a single relu, for every width. ``two_layer_moment_draws`` computes G_f, A_f, B_f
  per network exactly (Monte Carlo over the weights only) and checks this.
- Any family given by a draw function: ``generic_moment_draws`` draws k inputs per f and uses
  unbiased per-f estimates (a U-statistic for ||g_f||^2).

Monte Carlo estimates average i.i.d. per-f draws of (G_f, A_f, B_f) until the standard error of
eta (delta method on the ratio) is at most ``precision`` times eta.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from iclab.tasks.nonlinear import DrawFunction, TwoLayerReluTask
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

MomentDraws = Callable[[int, torch.Generator], torch.Tensor]
"""(count, generator) -> i.i.d. per-f estimates of (G_f, A_f, B_f): (count, 3), float64."""

DEFAULT_PRECISION = 0.002
CHUNK = 20_000
INPUTS_PER_FUNCTION = 32


@dataclass(frozen=True)
class GDOptimum:
    """The optimal step size eta and loss of a rotation-invariant family, with standard errors
    (0 for closed forms) and the number of functions drawn (0 for closed forms)."""

    eta: float
    loss: float
    eta_stderr: float
    loss_stderr: float
    draws: int


def gd_optimum_from_moments(
    n: int, d: int, sigma: float, G: float, A: float, B: float
) -> tuple[float, float]:
    """(eta, L*) from the moments G = E||g_f||^2, A = E f^2, B = E f^2 ||x||^2."""
    eta = G / (B + sigma**2 * d + (n - 1) * G)
    return eta, A + sigma**2 - n * eta * G


def _gradients(n: int, d: int, sigma: float, G: float, B: float) -> tuple[np.ndarray, np.ndarray]:
    """d eta and d L* with respect to the means (G, A, B): two (3,) arrays."""
    D = B + sigma**2 * d + (n - 1) * G
    eta = G / D
    d_eta = np.array([(B + sigma**2 * d) / D**2, 0.0, -G / D**2])
    d_loss = np.array([-n * (eta + G * d_eta[0]), 1.0, -n * G * d_eta[2]])
    return d_eta, d_loss


def relu_optimum(n: int, d: int, sigma: float) -> GDOptimum:
    """relu(u^T x) (and two-layer relu, same moments): eta = 1/(n + 2d + 3 + 4 sigma^2 d)."""
    eta, loss = gd_optimum_from_moments(n, d, sigma, 0.25, 0.5, (d + 2) / 2)
    return GDOptimum(eta, loss, 0.0, 0.0, 0)


def arccos_kernel(W: torch.Tensor) -> torch.Tensor:
    """E_x[relu(w_j.x) relu(w_k.x)] for x ~ N(0, I): W (B, m, d) -> (B, m, m)."""
    norms = W.norm(dim=-1)                                       # (B, m)
    outer = norms[:, :, None] * norms[:, None, :]                # (B, m, m)
    cosine = (W @ W.transpose(1, 2)) / outer.clamp_min(torch.finfo(W.dtype).tiny)
    cosine = cosine.clamp(-1.0, 1.0)
    angle = torch.arccos(cosine)
    sine = (1.0 - cosine**2).clamp_min(0.0).sqrt()
    kernel: torch.Tensor = outer * (sine + (math.pi - angle) * cosine) / (2 * math.pi)
    return kernel


def two_layer_moment_draws(task: TwoLayerReluTask) -> MomentDraws:
    """Exact per-network (G_f, A_f, B_f) of the two-layer relu family, networks drawn at random."""

    def draws(count: int, generator: torch.Generator) -> torch.Tensor:
        W, a = task.draw_weights(count, generator, torch.float64)   # (B, m, d), (B, m)
        m = task.width
        g = torch.einsum("bmd,bm->bd", W, a) / (2 * math.sqrt(m))   # g_f: (B, d)
        A = torch.einsum("bj,bjk,bk->b", a, arccos_kernel(W), a) / m
        return torch.stack([(g * g).sum(-1), A, (task.d + 2) * A], dim=-1)

    return draws


def generic_moment_draws(
    draw: DrawFunction, d: int, inputs_per_function: int = INPUTS_PER_FUNCTION
) -> MomentDraws:
    """Unbiased per-f estimates of (G_f, A_f, B_f) from k = ``inputs_per_function`` inputs.

    With s = sum_i f(x_i) x_i, ||g_f||^2 is estimated by (||s||^2 - sum_i f_i^2 ||x_i||^2)
    / (k (k-1)), A_f and B_f by plain means.
    """
    k = inputs_per_function
    if k < 2:
        raise ConfigError(f"inputs_per_function must be >= 2, got {k}")

    def draws(count: int, generator: torch.Generator) -> torch.Tensor:
        inputs = torch.randn(count, k, d, generator=generator, dtype=torch.float64,
                             device=generator.device)
        values = draw(inputs, generator).to(torch.float64)        # (B, k)
        if tuple(values.shape) != (count, k):
            raise ConfigError(f"draw returned shape {tuple(values.shape)}, expected {(count, k)}")
        squares = values**2                                       # (B, k)
        weighted = squares * (inputs**2).sum(-1)                  # f^2 ||x||^2: (B, k)
        s = torch.einsum("bk,bkd->bd", values, inputs)
        G = ((s * s).sum(-1) - weighted.sum(-1)) / (k * (k - 1))
        return torch.stack([G, squares.mean(-1), weighted.mean(-1)], dim=-1)

    return draws


def estimate_gd_optimum(
    moment_draws: MomentDraws,
    n: int,
    d: int,
    sigma: float,
    precision: float = DEFAULT_PRECISION,
    seed: int = 0,
    max_draws: int = 2_000_000,
    chunk: int = CHUNK,
) -> GDOptimum:
    """eta and L* by Monte Carlo over f, drawing chunks until stderr(eta) <= precision * eta.

    Stops at ``max_draws`` functions at the latest (the standard error then says how far it
    got; a family with E||g_f||^2 = 0 has eta = 0 and always ends there). Standard errors by
    the delta method on the ratio of means.
    """
    if not (isinstance(precision, int | float) and math.isfinite(precision) and precision > 0):
        raise ConfigError(f"precision must be a finite number > 0, got {precision!r}")
    total = torch.zeros(3, dtype=torch.float64)
    cross = torch.zeros(3, 3, dtype=torch.float64)
    count, index = 0, 0
    while True:
        sample = moment_draws(chunk, make_generator(seed, "gd-optimum", index))
        total += sample.sum(0)
        cross += sample.T @ sample
        count += sample.shape[0]
        index += 1
        mean = (total / count).numpy()
        covariance = (cross.numpy() / count - np.outer(mean, mean)) * count / (count - 1)
        G, A, B = (float(value) for value in mean)
        eta, loss = gd_optimum_from_moments(n, d, sigma, G, A, B)
        d_eta, d_loss = _gradients(n, d, sigma, G, B)
        eta_se = math.sqrt(max(float(d_eta @ covariance @ d_eta), 0.0) / count)
        loss_se = math.sqrt(max(float(d_loss @ covariance @ d_loss), 0.0) / count)
        if (index >= 2 and eta_se <= precision * eta) or count >= max_draws:
            return GDOptimum(eta, loss, eta_se, loss_se, count)
