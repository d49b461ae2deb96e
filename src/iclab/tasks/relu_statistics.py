"""Relu prompts drawn as Z = sum_i e_i e_i^T: the sufficient-statistic sampler of ``relu``.

Any depth of linear self-attention reads a prompt only through Z = sum_{i <= n} e_i e_i^T,
e_i = [x_i; y_i], and the query x_q (``iclab.tasks.wishart``). For the relu family, x ~ N(0, I_d),
u uniform on the sphere and y = relu(u^T x) + sigma eps, Z has an exact law that needs far
fewer random numbers than the prompt (docs/theory.md section 10.2.1):

- Let P be the Householder reflection with P e_1 = -s u, s = sign(u_1) (v = e_1 + s u, so
  |v|^2 >= 2 and no cancellation), and write x = P [a; r]: then u^T x = -s a, so
  t = u^T x ~ N(0, 1) and r ~ N(0, I_(d-1)) are independent, and a = -s t.
- Given the n pairs (a_i, y_i) the context's rows r_i are still i.i.d. N(0, I_(d-1)). Take
  the Gram-Schmidt basis q_1, q_2 of V = [a, y] (n x 2): a = r11 q_1, y = r12 q_1 + r22 q_2
  (r22 = 0 where y is a multiple of a), and complete it to an orthonormal basis of R^n. In that
  basis the (n, d-1) matrix of rows r_i is again i.i.d. standard normal: its first two rows
  g_1, g_2 ~ N(0, I_(d-1)), the other n - 2 rows a Gaussian block whose Gram matrix is
  Wishart(n - 2, I_(d-1)) (Bartlett's factor F, ``iclab.tasks.wishart.wishart_factor``).
- Hence, with f_i = [a_i; r_i; y_i], Z~ = sum_i f_i f_i^T = C C^T with the columns
  c_1 = [r11; g_1; r12], c_2 = [0; g_2; r22] and [0; F_j; 0], and Z = (P~ C)(P~ C)^T,
  P~ = diag(P, 1). The query is x_q = P [-s t_q; r_q], y_q = relu(t_q) + sigma eps_q.

The context noise enters Z only through three numbers (``add_label_noise``). Per prompt that is
n + 1 normals for t, d for u, 3(d-1) for g_1, g_2 and r_q, Bartlett's (d-1)(d-2)/2 normals and
d-1 chi-squares, and with noise 3 normals and one chi-square more: at d = 5, n = 20, 47 normals
and 5 chi-squares against the whole prompt's 131 normals, and no (d, n, B) tensor. The normals
come in one draw; the chi-squares from NumPy's gamma sampler seeded by ``generator``
(``iclab.tasks.wishart.chi_square``: half the cost of torch's). Every per-prompt matrix is
stored batch-last, (d+1, k, B), as in ``iclab.tasks.wishart``. On the CPU at n = 20 the
saving in random numbers is mostly spent on the small per-prompt operations: a training step
is only 1.1-1.2x faster than the whole-prompt step (benchmarks/README.md); the gap grows
with n.
"""

from __future__ import annotations

import torch

from iclab.batches import ZStatistics
from iclab.tasks.base import check_batch
from iclab.tasks.wishart import chi_square, wishart_factor


def sample_relu_z_statistics(
    d: int, n: int, sigma: float, batch: int, generator: torch.Generator,
    dtype: torch.dtype = torch.float32,
) -> ZStatistics:
    """Draw ``batch`` relu prompts (d, n, sigma) as (Z, x_q, y_q) with the law of whole prompts
    (module docstring). Z: (B, d+1, d+1) view of a batch-last tensor; x_q: (B, d); y_q: (B,).
    Every number comes from ``generator``."""
    return draw_relu_z(d, n, sigma, batch, generator, dtype)[0]


def relu_z_random_numbers(
    d: int, n: int, sigma: float, batch: int, generator: torch.Generator,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """Every random number ``draw_relu_z`` uses, in the order it draws them: the normals
    (n + 1 + d + 3(d-1) + (3 with noise), B) (t, u, g_1, g_2, r_q, noise; min(n, 2) + 1 vectors
    g for n < 2), Bartlett's factor (d-1, min(d-1, n-2), B) of the rest (None where it is
    empty) and the noise's chi2_(n-2): (B,) (None for sigma = 0 or n <= 2)."""
    device, k = generator.device, d - 1
    rows, noisy = min(n, 2), sigma > 0
    count = n + 1 + d + (rows + 1) * k + (3 if noisy else 0)
    draws = torch.randn(count, batch, generator=generator, dtype=dtype, device=device)
    rest = wishart_factor(k, n - rows, batch, generator, dtype) if k and n > rows else None
    chi2 = chi_square([n - 2], batch, generator, dtype)[0] if noisy and n > 2 else None
    return draws, rest, chi2


def draw_relu_z(
    d: int, n: int, sigma: float, batch: int, generator: torch.Generator,
    dtype: torch.dtype = torch.float32,
) -> tuple[ZStatistics, torch.Tensor]:
    """``sample_relu_z_statistics`` and the prompts' directions u: (d, B) (for tests: with
    sigma = 0, u^T Z_xy = Z_yy and y_q = relu(u^T x_q) hold exactly)."""
    check_batch(batch)
    device, k, p = generator.device, d - 1, d + 1
    noisy = sigma > 0
    rows = min(n, 2)                                       # the basis vectors q_1 (, q_2)
    draws, rest, chi2 = relu_z_random_numbers(d, n, sigma, batch, generator, dtype)
    counts = [n + 1, d, (rows + 1) * k, 3 if noisy else 0]
    t, direction, flat, noise = torch.split(draws, counts)  # t_i = u^T x_i: (n+1, B), ...
    normals = flat.view(rows + 1, k, batch)                # g_1 (, g_2), r_q: (k, B) each

    u = direction.div_(direction.square().sum(0).sqrt_())  # (d, B), unit columns
    s = torch.where(u[0] >= 0, 1.0, -1.0).to(dtype)        # (B,)
    v = u * s                                              # v = e_1 + s u: (d, B)
    v[0].add_(1.0)
    beta = 2.0 / v.square().sum(0)                         # P = I - beta v v^T

    context = t[:n]
    positive = context.relu()                              # relu(t_i): the noiseless labels
    plus = positive.square().sum(0)                        # sum relu(t_i)^2 = -s a.relu(t)
    minus = (context - positive).square_().sum(0)          # sum over t_i < 0 of t_i^2
    r11 = (plus + minus).sqrt_()                           # |a|
    a_y, y_y = plus.clone(), plus.clone()                  # -s a.y and |y|^2 without noise
    y_q = t[n].relu()
    if noisy:
        a_y, y_y, y_q = add_label_noise(plus, minus, a_y, y_y, y_q, noise, chi2, n, sigma)
    r12 = a_y.mul_(-s).div_(r11)                           # a.y / |a|
    r22 = (y_y - r12.square()).clamp_(min=0.0).sqrt_()

    columns = rows + (0 if rest is None else rest.shape[1])
    C = torch.zeros(p, columns, batch, dtype=dtype, device=device)   # Z~ = C C^T
    C[0, 0] = r11
    C[d, 0] = r12
    C[1:d, :rows] = normals[:rows].transpose(0, 1)
    if rows == 2:
        C[d, 1] = r22
    if rest is not None:
        C[1:d, rows:] = rest
    query = torch.cat([(t[n] * -s)[None], normals[rows]])  # [-s t_q; r_q]: (d, B)

    C[:d].sub_(v[:, None] * ((v[:, None] * C[:d]).sum(0) * beta))     # P applied to columns
    x_q = query.sub_(v * ((v * query).sum(0) * beta))
    Z = C[:, 0, None] * C[None, :, 0]                                  # (p, p, B)
    for j in range(1, columns):
        Z.addcmul_(C[:, j, None], C[None, :, j])
    return ZStatistics(Z=Z.permute(2, 0, 1), x_q=x_q.T, y_q=y_q, n=n), u


def add_label_noise(
    plus: torch.Tensor, minus: torch.Tensor, a_y: torch.Tensor, y_y: torch.Tensor,
    y_q: torch.Tensor, normals: torch.Tensor, chi2: torch.Tensor | None, n: int, sigma: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(t.y, |y|^2, y_q) with the noise added, all (B,), updated in place (t.y = -s a.y),
    from three normals (``normals``: (3, B)) and, for n > 2, one chi2_(n-2) per prompt
    (``chi2``: (B,)).

    The context noise eps ~ N(0, I_n) enters only through its products with relu(t) and with
    min(t, 0), two orthogonal vectors of squared lengths ``plus`` and ``minus``, and through
    |eps|^2: eps.relu(t) = sqrt(plus) alpha, eps.min(t, 0) = sqrt(minus) beta and, for n >= 2,
    |eps|^2 = alpha^2 + beta^2 + chi2_(n-2) with alpha, beta ~ N(0, 1) and the chi-square
    independent (the noise in the rest of R^n). Where plus = 0 (no t_i > 0), alpha enters
    nowhere else and alpha^2 is the extra chi2_1 of the larger rest; likewise beta where
    minus = 0. For n = 1, eps = alpha or beta, whichever of plus, minus is not 0."""
    alpha, beta, query_noise = normals[0], normals[1], normals[2]
    if n == 1:
        noise_sq = torch.where(plus > 0, alpha, beta).square_()
    else:
        noise_sq = torch.addcmul(alpha.square(), beta, beta)
        if chi2 is not None:
            noise_sq += chi2
    along_plus, along_minus = plus.sqrt() * alpha, minus.sqrt() * beta
    a_y = a_y.add_(along_plus + along_minus, alpha=sigma)            # -s a.y: a = -s t
    y_y = y_y.add_(along_plus, alpha=2 * sigma).add_(noise_sq, alpha=sigma**2)
    return a_y, y_y, y_q.add_(query_noise, alpha=sigma)
