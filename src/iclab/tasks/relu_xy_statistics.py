"""Relu prompts drawn as (X^T y, x_q, y_q): what the nuisance-free one-layer LSA reads.

With u_x = 0 and m_y = 0 the one-layer LSA predicts u_y (X^T y)^T M_x x_q
(``iclab.utils.batches.XYStatistics``), and for the relu family X^T y has an exact law that needs
neither the prompt nor Z (docs/theory.md section 10.2.2). Write x_i = t_i u + w_i with
t_i = u^T x_i ~ N(0, 1) and w_i = (I - u u^T) x_i, independent given u. The labels
y_i = relu(t_i) + sigma eps_i depend on t and the noise only, so

    X^T y = (t.y) u + sum_i y_i w_i,    sum_i y_i w_i | (t, eps) ~ |y| (I - u u^T) h,

with h ~ N(0, I_d) independent. t.y and |y|^2 need only sum relu(t_i)^2 and
sum min(t_i, 0)^2 (``relu_context_sums``: two chi-squares of a binomial number of degrees of
freedom) and, with noise, three normals and a chi-square (``add_label_noise``, as for Z). The
query is drawn as it is: x_q ~ N(0, I_d), y_q = relu(u^T x_q) + sigma eps_q. Per prompt that
is 3d normals, n random bits and two chi-squares, and with noise 3 normals and one chi-square
more: 18 normals and 3 chi-squares at d = 5, n = 20, whatever n is, against 131 normals for
the prompt and 27 normals and 7 chi-squares for Z.
"""

from __future__ import annotations

import torch

from iclab.tasks.base import check_batch
from iclab.tasks.relu_statistics import add_label_noise, relu_context_sums
from iclab.utils.batches import XYStatistics


def sample_relu_xy_statistics(
    d: int, n: int, sigma: float, batch: int, generator: torch.Generator,
    dtype: torch.dtype = torch.float32,
) -> XYStatistics:
    """Draw ``batch`` relu prompts (d, n, sigma) as (X^T y, x_q, y_q) with the law of whole
    prompts (module docstring). xy, x_q: (B, d) views of batch-last tensors; y_q: (B,). Every
    number comes from ``generator``."""
    return draw_relu_xy(d, n, sigma, batch, generator, dtype)[0]


def relu_xy_random_numbers(
    d: int, n: int, sigma: float, batch: int, generator: torch.Generator,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]]:
    """Every random number ``draw_relu_xy`` uses, in its order: the normals
    (3d + (3 with noise), B) (u, h, x_q, noise) and the context's sums and noise chi-square
    (``relu_context_sums``)."""
    noisy = sigma > 0
    count = 3 * d + (3 if noisy else 0)
    draws = torch.randn(count, batch, generator=generator, dtype=dtype, device=generator.device)
    return draws, relu_context_sums(n, noisy, batch, generator, dtype)


def draw_relu_xy(
    d: int, n: int, sigma: float, batch: int, generator: torch.Generator,
    dtype: torch.dtype = torch.float32,
) -> tuple[XYStatistics, torch.Tensor]:
    """``sample_relu_xy_statistics`` and the prompts' directions u: (d, B) (for tests: with
    sigma = 0, u^T X^T y = |y|^2 and y_q = relu(u^T x_q) hold exactly)."""
    check_batch(batch)
    noisy = sigma > 0
    draws, (plus, minus, chi2) = relu_xy_random_numbers(d, n, sigma, batch, generator, dtype)
    direction, h, x_q, noise = torch.split(draws, [d, d, d, 3 if noisy else 0])  # (d, B) ...

    u = direction.div_(direction.square().sum(0).sqrt_())          # (d, B), unit columns
    y_q = (u * x_q).sum(0).relu_()
    if noisy:
        t_y, y_y, y_q = add_label_noise(plus, minus, y_q, noise, chi2, n, sigma)
        y_norm = y_y.sqrt_()                                       # |y|
    else:
        t_y, y_norm = plus, plus.sqrt()                            # t.y = |y|^2 = plus
    along = t_y - (u * h).sum(0) * y_norm                          # (B,)
    xy = torch.addcmul(h * y_norm, u, along)                       # |y| (I - u u^T) h + (t.y) u
    return XYStatistics(xy=xy.T, x_q=x_q.T, y_q=y_q, n=n), u
