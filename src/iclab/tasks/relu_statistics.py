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

The context enters only through sum relu(t_i)^2 and sum min(t_i, 0)^2, drawn as two
chi-squares of a binomial number of degrees of freedom (``relu_context_sums``), and the
noise only through three numbers and a chi-square (``add_label_noise``). Per prompt that is
1 normal for t_q, d for u, 3(d-1) for g_1, g_2 and r_q, Bartlett's (d-1)(d-2)/2 normals and
d-1 chi-squares, two more chi-squares and n random bits for the context, and with noise 3
normals and one chi-square more: at d = 5, n = 20, 27 normals and 7 chi-squares against the
whole prompt's 131 normals, whatever n is, and no (d, n, B) tensor. The normals come in one
torch draw, the rest from NumPy generators seeded by ``generator`` (its gamma sampler costs
half of torch's). Every per-prompt matrix is stored batch-last, (d+1, k, B), as in
``iclab.tasks.wishart``. The one-layer LSA held nuisance-free reads even less
(``iclab.tasks.relu_xy_statistics``).
"""

from __future__ import annotations

import numpy as np
import torch

from iclab.tasks.base import check_batch
from iclab.tasks.wishart import wishart_factor
from iclab.utils.batches import ZStatistics
from iclab.utils.seeding import numpy_generator


def sample_relu_z_statistics(
    d: int, n: int, sigma: float, batch: int, generator: torch.Generator,
    dtype: torch.dtype = torch.float32,
) -> ZStatistics:
    """Draw ``batch`` relu prompts (d, n, sigma) as (Z, x_q, y_q) with the law of whole prompts
    (module docstring). Z: (B, d+1, d+1) view of a batch-last tensor; x_q: (B, d); y_q: (B,).
    Every number comes from ``generator``."""
    return draw_relu_z(d, n, sigma, batch, generator, dtype)[0]


def relu_context_sums(
    n: int, noisy: bool, batch: int, generator: torch.Generator,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(sum_i relu(t_i)^2, sum_i min(t_i, 0)^2) over n i.i.d. N(0, 1) projections t_i, and
    with noise the chi2_(n-2) of ``add_label_noise`` (None without noise or for n <= 2): (B,)
    each, on ``generator``'s device.

    The number K of positive t_i is Binomial(n, 1/2), and given K the two sums are independent
    chi2_K and chi2_(n-K) (squares of K and n - K half-normals): drawn with NumPy (a generator
    seeded by ``generator``), K as the number of ones among n random bits (n <= 64, else
    NumPy's binomial), the chi-squares in one gamma call. Five numbers per prompt for any n,
    instead of n normals and three passes over them."""
    rng = numpy_generator(generator)
    if n <= 64:
        bits = rng.integers(0, (1 << n) - 1, size=batch, dtype=np.uint64, endpoint=True)
        positives = np.bitwise_count(bits).astype(np.float64)
    else:
        positives = rng.binomial(n, 0.5, size=batch).astype(np.float64)
    rows = 3 if noisy and n > 2 else 2
    shapes = np.empty((rows, batch))
    shapes[0] = positives / 2
    shapes[1] = (n - positives) / 2
    if rows == 3:
        shapes[2] = (n - 2) / 2
    sums = torch.from_numpy(rng.standard_gamma(shapes)).to(generator.device, dtype).mul_(2)
    return sums[0], sums[1], sums[2] if rows == 3 else None


def relu_z_random_numbers(
    d: int, n: int, sigma: float, batch: int, generator: torch.Generator,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor, torch.Tensor | None],
           torch.Tensor | None]:
    """Every random number ``draw_relu_z`` uses, in the order it draws them: the normals
    (1 + d + 3(d-1) + (3 with noise), B) (t_q, u, g_1, g_2, r_q, noise; min(n, 2) + 1 vectors
    g for n < 2), the context's sums and noise chi-square (``relu_context_sums``) and
    Bartlett's factor (d-1, min(d-1, n-2), B) of the rest (None where it is empty)."""
    device, k = generator.device, d - 1
    rows, noisy = min(n, 2), sigma > 0
    count = 1 + d + (rows + 1) * k + (3 if noisy else 0)
    draws = torch.randn(count, batch, generator=generator, dtype=dtype, device=device)
    sums = relu_context_sums(n, noisy, batch, generator, dtype)
    rest = wishart_factor(k, n - rows, batch, generator, dtype) if k and n > rows else None
    return draws, sums, rest


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
    draws, (plus, minus, chi2), rest = relu_z_random_numbers(d, n, sigma, batch, generator,
                                                             dtype)
    counts = [1, d, (rows + 1) * k, 3 if noisy else 0]
    t_q, direction, flat, noise = torch.split(draws, counts)  # t_q = u^T x_q: (1, B), ...
    normals = flat.view(rows + 1, k, batch)                # g_1 (, g_2), r_q: (k, B) each

    u = direction.div_(direction.square().sum(0).sqrt_())  # (d, B), unit columns
    s = torch.where(u[0] >= 0, 1.0, -1.0).to(dtype)        # (B,)
    v = u * s                                              # v = e_1 + s u: (d, B)
    v[0].add_(1.0)
    beta = 2.0 / v.square().sum(0)                         # P = I - beta v v^T

    # plus = sum relu(t_i)^2 = -s a.relu(t), minus = sum over t_i < 0 of t_i^2
    r11 = (plus + minus).sqrt_()                           # |a|
    a_y, y_y = plus, plus                                  # -s a.y and |y|^2 without noise
    y_q = t_q[0].relu()
    if noisy:
        a_y, y_y, y_q = add_label_noise(plus, minus, y_q, noise, chi2, n, sigma)
    r12 = (a_y * -s).div_(r11)                             # a.y / |a|
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
    query = torch.cat([t_q * -s, normals[rows]])           # [-s t_q; r_q]: (d, B)

    C[:d].sub_(v[:, None] * ((v[:, None] * C[:d]).sum(0) * beta))     # P applied to columns
    x_q = query.sub_(v * ((v * query).sum(0) * beta))
    Z = C[:, 0, None] * C[None, :, 0]                                  # (p, p, B)
    for j in range(1, columns):
        Z.addcmul_(C[:, j, None], C[None, :, j])
    return ZStatistics(Z=Z.permute(2, 0, 1), x_q=x_q.T, y_q=y_q, n=n), u


def add_label_noise(
    plus: torch.Tensor, minus: torch.Tensor, y_q: torch.Tensor, normals: torch.Tensor,
    chi2: torch.Tensor | None, n: int, sigma: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(t.y, |y|^2, y_q) with the noise: new (B,) tensors for t.y = -s a.y and |y|^2, and y_q
    updated in place, from three normals (``normals``: (3, B)) and, for n > 2, one
    chi2_(n-2) per prompt (``chi2``: (B,)). Without noise t.y = |y|^2 = ``plus``.

    The context noise eps ~ N(0, I_n) enters only through its products with relu(t) and with
    min(t, 0), two orthogonal vectors of squared lengths ``plus`` and ``minus``, and through
    |eps|^2: eps.relu(t) = sqrt(plus) alpha, eps.min(t, 0) = sqrt(minus) beta and, for n >= 2,
    |eps|^2 = alpha^2 + beta^2 + chi2_(n-2) with alpha, beta ~ N(0, 1) and the chi-square
    independent (the noise in the rest of R^n). Where plus = 0 (no t_i > 0), alpha enters
    nowhere else and alpha^2 is the extra chi2_1 of the larger rest; likewise beta where
    minus = 0. For n = 1, eps = alpha or beta, whichever of plus, minus is not 0. So
    t.y = sqrt(plus) (sqrt(plus) + sigma alpha) + sigma sqrt(minus) beta and, for n >= 2,
    |y|^2 = (sqrt(plus) + sigma alpha)^2 + sigma^2 (beta^2 + chi2_(n-2))."""
    alpha, beta, query_noise = normals[0], normals[1], normals[2]
    root = plus.sqrt()
    shifted = torch.add(root, alpha, alpha=sigma)                    # sqrt(plus) + sigma alpha
    t_y = torch.mul(root, shifted).addcmul_(minus.sqrt(), beta, value=sigma)
    if n == 1:                                  # y = sqrt(plus) + sigma alpha or -sigma beta
        y_y = torch.where(plus > 0, shifted, beta * sigma).square_()
    else:
        rest = beta.square() if chi2 is None else torch.addcmul(chi2, beta, beta)
        y_y = shifted.square_().add_(rest, alpha=sigma**2)
    return t_y, y_y, y_q.add_(query_noise, alpha=sigma)
