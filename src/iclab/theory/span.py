"""The span optimum: least squares over the LSA features Z_ab x_q,c (docs/theory.md section 6).

Every one-layer LSA prediction is linear in the features Z_ab x_q,c, Z = sum_i e_i e_i^T,
a <= b in 0..d (Z is symmetric), c in 0..d-1: p = d (d+1) (d+2) / 2 features. The best
predictor in their span is a convex least-squares problem, so its loss is a lower bound on the
loss of every LSA (with ``query_cubic`` the features x_q,a x_q,b x_q,c, a <= b <= c, of an LSA
whose query attends to itself are added). It is solved here by Monte Carlo on any task family:

1. normal equations H = sum F^T F, g = sum F^T y_q over ``fit_prompts`` fresh prompts,
   accumulated in float64 chunks drawn from seeded streams, solved after scaling columns;
2. the loss of the fitted coefficients on ``test_prompts`` independent prompts
   (``heldout_loss``, with its standard error). The fitted coefficients miss the exact optimum
   by an estimation error whose cost, tr(E[F F^T] Cov(theta)), is about p / fit_prompts
   relatively (``estimation_excess``, from the sandwich covariance below); ``loss`` is the
   held-out loss less that, an estimate of the span optimum itself. (``fit_loss``, the
   in-sample loss, errs by about as much the other way.)

Read off the coefficients: the effective matrix Gamma_{c,a} = coefficient of Z_{a,y} x_q,c
(the GD term x_q^T Gamma X^T y), its isotropy error, and the nuisance blocks' shares of the
prediction's variance: ``x_x`` (Z_ab, a, b < d), ``y_y`` (Z_yy) and ``query`` (the cubic
terms). Coefficient standard errors use the sandwich estimate H^-1 (sum r^2 F^T F) H^-1 with
residuals from the test prompts. Cost grows as p^2 per prompt, so d is limited to ``MAX_D``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from iclab.tasks.base import TaskFamily
from iclab.utils.batches import Prompts
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

MAX_D = 8
ELEMENTS_PER_CHUNK = 4_000_000
TEST_PROMPTS = 200_000


def _pairs(d: int) -> tuple[torch.Tensor, torch.Tensor]:
    rows, cols = torch.triu_indices(d + 1, d + 1)
    return rows, cols


def _triples(d: int) -> list[tuple[int, int, int]]:
    return [(a, b, c) for a in range(d) for b in range(a, d) for c in range(b, d)]


def feature_count(d: int, query_cubic: bool = False) -> int:
    """p = d (d+1) (d+2) / 2, plus d (d+1) (d+2) / 6 cubic query terms."""
    return d * (d + 1) * (d + 2) // 2 + (len(_triples(d)) if query_cubic else 0)


def default_fit_prompts(d: int, query_cubic: bool = False) -> int:
    """3000 prompts per feature, between 200,000 and 1,000,000."""
    return min(1_000_000, max(200_000, 3000 * feature_count(d, query_cubic)))


FIT_PROMPTS_PER_FEATURE = 100
"""The fewest fit prompts per feature: with fewer, the estimation error (about p / fit_prompts
of the loss) makes the bound meaningless."""
MAX_PROMPTS = 100_000_000
MAX_DRAWN = 2e10
"""The most random numbers a span fit may draw (fit and test prompts, n + 1 tokens each)."""


def check_prompt_counts(d: int, fit_prompts: int | None, test_prompts: int,
                        query_cubic: bool = False, n: int | None = None) -> int:
    """The fit prompts to use; ConfigError naming a count that is too low or too high, or
    (given n) prompts whose numbers to draw exceed ``MAX_DRAWN``."""
    p = feature_count(d, query_cubic)
    fit = default_fit_prompts(d, query_cubic) if fit_prompts is None else fit_prompts
    low = FIT_PROMPTS_PER_FEATURE * p
    for name, value, minimum in (("fit_prompts", fit, low), ("test_prompts", test_prompts, 100)):
        if isinstance(value, bool) or not isinstance(value, int) or not (
                minimum <= value <= MAX_PROMPTS):
            raise ConfigError(f"{name} must be an integer from {minimum} to {MAX_PROMPTS} "
                              f"(d = {d}: {p} features), got {value!r}")
    drawn = (fit + test_prompts) * ((n or 0) + 1) * (d + 1)
    if n is not None and drawn > MAX_DRAWN:
        raise ConfigError(f"the span fit at d = {d}, n = {n} would draw {drawn:.1e} numbers "
                          f"({fit} + {test_prompts} prompts of {n + 1} tokens; limit "
                          f"{MAX_DRAWN:.0e}): lower n or the prompt counts")
    return fit


def span_features(prompts: Prompts, query_cubic: bool = False) -> torch.Tensor:
    """F: (B, p) float64. Column pair * d + c holds Z_ab x_q,c for the pair-th a <= b; then
    the cubic terms x_q,a x_q,b x_q,c (a <= b <= c) when ``query_cubic``."""
    p = prompts.to(torch.float64)
    d = p.d
    tokens = torch.cat([p.X, p.y[..., None]], dim=-1)          # (B, n, d+1)
    Z = tokens.transpose(1, 2) @ tokens                         # (B, d+1, d+1)
    rows, cols = _pairs(d)
    pairs = Z[:, rows, cols]                                    # (B, P)
    features = (pairs[:, :, None] * p.x_q[:, None, :]).reshape(p.batch, -1)
    if not query_cubic:
        return features
    index = torch.tensor(_triples(d), dtype=torch.long)         # (C, 3)
    cubic = p.x_q[:, index].prod(-1)                            # (B, C)
    return torch.cat([features, cubic], dim=-1)


def _blocks(d: int, query_cubic: bool) -> dict[str, np.ndarray]:
    """Feature indices of the blocks gd (Z_{a,y}), x_x, y_y and query."""
    rows, cols = (t.numpy() for t in _pairs(d))
    pair_block = np.where(cols < d, 0, np.where(rows < d, 1, 2))   # x_x, gd, y_y
    per_feature = np.repeat(pair_block, d)
    base = per_feature.size
    cubic = np.arange(base, base + (len(_triples(d)) if query_cubic else 0))
    return {"gd": np.flatnonzero(per_feature == 1), "x_x": np.flatnonzero(per_feature == 0),
            "y_y": np.flatnonzero(per_feature == 2), "query": cubic}


def _gamma_index(d: int) -> np.ndarray:
    """index[c, a] = the feature Z_{a,y} x_q,c: (d, d)."""
    rows, cols = (t.numpy() for t in _pairs(d))
    pair_of = {(int(r), int(c)): k for k, (r, c) in enumerate(zip(rows, cols, strict=True))}
    return np.array([[pair_of[(a, d)] * d + c for a in range(d)] for c in range(d)])


def _solve(H: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """theta = H^+ g and H^+ after scaling columns to unit diagonal (eigenvalue cut 1e-13)."""
    scale = np.sqrt(np.clip(np.diag(H), np.finfo(np.float64).tiny, None))
    scaled = H / np.outer(scale, scale)
    values, vectors = np.linalg.eigh(scaled)
    keep = values > 1e-13 * values[-1]
    inverse = (vectors[:, keep] / values[keep]) @ vectors[:, keep].T
    inverse = inverse / np.outer(scale, scale)
    return inverse @ g, inverse


@dataclass(frozen=True)
class SpanOptimum:
    """The fitted span optimum. coefficients: (p,); gamma, gamma_stderr: (d, d)."""

    d: int
    query_cubic: bool
    coefficients: np.ndarray
    gamma: np.ndarray
    gamma_stderr: np.ndarray
    eta: float
    eta_stderr: float
    isotropy_err: float
    loss: float
    loss_stderr: float
    heldout_loss: float
    estimation_excess: float
    fit_loss: float
    nuisance: dict[str, float]
    fit_prompts: int
    test_prompts: int
    features: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "features", int(self.coefficients.size))

    def predict(self, prompts: Prompts) -> torch.Tensor:
        """The span optimum's prediction at each query: (B,) float64."""
        theta = torch.as_tensor(self.coefficients, dtype=torch.float64)
        return span_features(prompts, self.query_cubic) @ theta


def _chunk(task: TaskFamily, p: int) -> int:
    return max(1, ELEMENTS_PER_CHUNK // max(p, (task.n + 1) * (task.d + 1)))


def span_optimum(
    task: TaskFamily,
    fit_prompts: int | None = None,
    test_prompts: int = TEST_PROMPTS,
    seed: int = 0,
    query_cubic: bool = False,
) -> SpanOptimum:
    """Least squares over the LSA span on ``task``'s prompts; see the module docstring."""
    d = task.d
    if d > MAX_D:
        raise ConfigError(
            f"the span optimum has d (d+1) (d+2) / 2 features and is limited to d <= {MAX_D}; "
            f"got d={d}"
        )
    p = feature_count(d, query_cubic)
    fit_prompts = check_prompt_counts(d, fit_prompts, test_prompts, query_cubic, task.n)
    chunk = _chunk(task, p)
    H = torch.zeros(p, p, dtype=torch.float64)
    g = torch.zeros(p, dtype=torch.float64)
    yy, done, index = 0.0, 0, 0
    while done < fit_prompts:
        size = min(chunk, fit_prompts - done)
        batch = task.sample_prompts(size, make_generator(seed, "span-fit", index), torch.float64)
        F = span_features(batch, query_cubic)
        H += F.T @ F
        g += F.T @ batch.y_q
        yy += float(batch.y_q @ batch.y_q)
        done, index = done + size, index + 1
    H_np, g_np = H.numpy(), g.numpy()
    theta, H_inverse = _solve(H_np, g_np)
    fit_loss = float(yy - 2 * theta @ g_np + theta @ H_np @ theta) / fit_prompts
    return _assess(task, theta, H_np, H_inverse, fit_loss, fit_prompts, test_prompts, seed,
                   query_cubic)


def _assess(
    task: TaskFamily, theta: np.ndarray, H: np.ndarray, H_inverse: np.ndarray, fit_loss: float,
    fit_prompts: int, test_prompts: int, seed: int, query_cubic: bool,
) -> SpanOptimum:
    """Test loss, sandwich standard errors, Gamma and nuisance shares of fitted coefficients."""
    d, p = task.d, theta.size
    blocks = _blocks(d, query_cubic)
    coefficients = torch.as_tensor(theta)
    meat = torch.zeros(p, p, dtype=torch.float64)
    sums = dict.fromkeys(("loss", "loss2", *blocks, "total"), 0.0)
    squares = dict.fromkeys((*blocks, "total"), 0.0)
    done, index, chunk = 0, 0, _chunk(task, p)
    while done < test_prompts:
        size = min(chunk, test_prompts - done)
        batch = task.sample_prompts(size, make_generator(seed, "span-test", index), torch.float64)
        F = span_features(batch, query_cubic)
        parts = {name: F[:, idx] @ coefficients[idx] for name, idx in blocks.items()}
        parts["total"] = F @ coefficients
        residual = batch.y_q - parts["total"]
        meat += F.T @ (F * residual[:, None] ** 2)
        sums["loss"] += float((residual**2).sum())
        sums["loss2"] += float((residual**4).sum())
        for name, part in parts.items():
            sums[name] += float(part.sum())
            squares[name] += float((part**2).sum())
        done, index = done + size, index + 1
    N = test_prompts
    loss = sums["loss"] / N
    loss_var = max(sums["loss2"] / N - loss**2, 0.0) * N / (N - 1)
    variance = {name: squares[name] / N - (sums[name] / N) ** 2 for name in squares}
    total_var = variance["total"]
    nuisance = {name: (variance[name] / total_var if total_var > 0 else 0.0)
                for name in ("x_x", "y_y", "query")}
    covariance = H_inverse @ (meat.numpy() * fit_prompts / N) @ H_inverse
    excess = float(np.sum(H * covariance)) / fit_prompts       # tr(H Cov) / fit_prompts
    gamma_index = _gamma_index(d)
    gamma = theta[gamma_index]
    gamma_se = np.sqrt(np.clip(np.diag(covariance)[gamma_index], 0.0, None))
    trace_index = np.diag(gamma_index)
    eta = float(np.trace(gamma) / d)
    eta_se = math.sqrt(max(float(covariance[np.ix_(trace_index, trace_index)].sum()), 0.0)) / d
    norm = float(np.linalg.norm(gamma))
    isotropy = float(np.linalg.norm(gamma - eta * np.eye(d))) / norm if norm > 0 else float("nan")
    return SpanOptimum(
        d=d, query_cubic=query_cubic, coefficients=theta, gamma=gamma, gamma_stderr=gamma_se,
        eta=eta, eta_stderr=eta_se, isotropy_err=isotropy, loss=loss - excess,
        loss_stderr=math.sqrt(loss_var / N), heldout_loss=loss, estimation_excess=excess,
        fit_loss=fit_loss, nuisance=nuisance,
        fit_prompts=fit_prompts, test_prompts=test_prompts,
    )
