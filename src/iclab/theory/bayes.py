"""The Bayes risk of linear Gaussian tasks by Monte Carlo (docs/theory.md section 7).

The posterior mean is ridge with penalty sigma^2 Sigma_w^{-1}; its risk given X is
sigma^2 + tr(Sigma_q C), C = Cov(w | X) the posterior covariance and Sigma_q the query's
covariance (Sigma_x unless the query law is shifted, docs/theory.md section 13), averaged here
over X (a Rao-Blackwellised estimate: only X is sampled). The prior's mean does not enter C, so
a task law off centre has the same risk. Two equal forms of C are used:

- n >= d: C = sigma^2 (X^T X + sigma^2 Sigma_w^{-1})^{-1}, (d, d). It depends on X only through
  S = X^T X ~ Wishart(n, Sigma_x), drawn by Bartlett's decomposition (d (d+1) / 2 numbers, any
  n). With sigma = 0 and n >= d, X has full column rank almost surely, w is determined by the
  prompt and the risk is exactly 0.
- n < d: C = Sigma_w - Sigma_w X^T G^{-1} X Sigma_w with G = X Sigma_w X^T + sigma^2 I, (n, n)
  (Woodbury; Gaussian conditioning on X w + noise = y), from X itself.

Each per-prompt risk is >= 0 in exact arithmetic and is clamped at 0 against rounding.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from iclab.tasks.covariance import validate_covariance
from iclab.theory.sized_mean import SizedMean, mean_to_stderr
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

MAX_WORK = 2e10
"""The most work (floating-point operations, a random draw counted as 10) the Monte Carlo
Bayes risk may take: seconds to a minute on one core."""
ELEMENTS_PER_CHUNK = 4_000_000
BLOCK_PROMPTS = 1000
"""Prompts per block of ``bayes_risk_to_stderr``."""
MOST_BLOCKS = 1000
"""The most blocks ``bayes_risk_to_stderr`` draws (a million prompts)."""


def bayes_work(d: int, n: int, sigma: float, prompts: int) -> float:
    """The work of ``bayes_risk`` (0 where the risk is known to be 0)."""
    if n >= d:
        return 0.0 if sigma == 0 else float(prompts) * (10 * d * d + 4 * d**3)
    return float(prompts) * (10 * n * d + 2 * n * d * d + 2 * n * n * d + 2 * n**3)


def check_bayes_prompts(d: int, n: int, sigma: float, prompts: int,
                        name: str = "prompts") -> None:
    """ConfigError (naming the option ``name``) unless ``prompts`` is an integer >= 2 whose
    work is at most MAX_WORK."""
    if isinstance(prompts, bool) or not isinstance(prompts, int) or prompts < 2:
        raise ConfigError(f"{name} must be an integer >= 2, got {prompts!r}")
    work = bayes_work(d, n, sigma, prompts)
    if work > MAX_WORK:
        most = max(0, int(prompts * MAX_WORK / work))
        raise ConfigError(f"the Monte Carlo Bayes risk at d={d}, n={n} from {prompts} prompts "
                          f"needs about {work:.1e} operations (limit {MAX_WORK:.0e}); give "
                          f"{name} at most {most} (0 skips it)")


def _wishart(chol_x: torch.Tensor, n: int, size: int, generator: torch.Generator
             ) -> torch.Tensor:
    """``size`` draws of X^T X ~ Wishart(n, L L^T), n >= d, by Bartlett: (size, d, d)."""
    d = chol_x.shape[0]
    lower = torch.randn(size, d, d, generator=generator, dtype=torch.float64).tril(-1)
    shape = torch.tensor([(n - i) / 2 for i in range(d)], dtype=torch.float64)
    chi2 = 2 * torch._standard_gamma(shape.expand(size, d).contiguous(), generator=generator)
    A = lower + torch.diag_embed(chi2.sqrt())                 # (size, d, d), lower triangular
    LA = chol_x @ A
    return LA @ LA.transpose(1, 2)


def _risks_full_rank(S: torch.Tensor, sigma: float, cov_q: torch.Tensor,
                     precision_w: torch.Tensor) -> torch.Tensor:
    """sigma^2 + sigma^2 tr(Sigma_q (S + sigma^2 Sigma_w^{-1})^{-1}) per draw of S: (B,)."""
    inverse = torch.linalg.inv(S + sigma**2 * precision_w)
    return sigma**2 + sigma**2 * torch.einsum("ij,bji->b", cov_q, inverse)


def _risks_few_examples(X: torch.Tensor, sigma: float, cov_q: torch.Tensor,
                        cov_w: torch.Tensor) -> torch.Tensor:
    """sigma^2 + tr(Sigma_q Sigma_w) - tr(G^{-1} X Sigma_w Sigma_q Sigma_w X^T) per X: (B,)."""
    XS = X @ cov_w                                            # (B, n, d)
    gram = XS @ X.transpose(1, 2)                             # X Sigma_w X^T: (B, n, n)
    if sigma > 0:
        gram = gram + sigma**2 * torch.eye(X.shape[1], dtype=X.dtype)
    explained = torch.linalg.solve(gram, (XS @ cov_q) @ XS.transpose(1, 2))
    return sigma**2 + torch.trace(cov_q @ cov_w) - torch.diagonal(explained, dim1=1, dim2=2).sum(-1)


def _checked_laws(n: int, sigma: float, sigma_x: np.ndarray, sigma_w: np.ndarray,
                  sigma_q: np.ndarray | None) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """(d, sigma_x, sigma_w, sigma_q) checked (ConfigError naming the bad value)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"n must be an integer >= 1, got {n!r}")
    if isinstance(sigma, bool) or not (isinstance(sigma, int | float) and math.isfinite(sigma)
                                       and sigma >= 0):
        raise ConfigError(f"sigma must be a finite number >= 0, got {sigma!r}")
    d = int(np.shape(sigma_x)[0]) if np.ndim(sigma_x) == 2 else 0
    sigma_x = validate_covariance(sigma_x, d, "sigma_x")
    sigma_w = validate_covariance(sigma_w, d, "sigma_w")
    sigma_q = sigma_x if sigma_q is None else validate_covariance(sigma_q, d, "sigma_q")
    return d, sigma_x, sigma_w, sigma_q


class _PromptRisks:
    """The Bayes risk given X of ``size`` prompts drawn from a generator: (size,) float64."""

    def __init__(self, n: int, sigma: float, sigma_x: np.ndarray, sigma_w: np.ndarray,
                 sigma_q: np.ndarray) -> None:
        self.n, self.d, self.sigma = n, sigma_x.shape[0], float(sigma)
        self.chol_x = torch.as_tensor(np.linalg.cholesky(sigma_x))
        self.cov_q, self.cov_w = torch.as_tensor(sigma_q), torch.as_tensor(sigma_w)
        self.precision_w = torch.linalg.inv(self.cov_w)
        n, d = self.n, self.d
        per_prompt = 3 * d * d if n >= d else n * d + d * d + n * n
        self.chunk = max(1, ELEMENTS_PER_CHUNK // per_prompt)
        """prompts per batch of tensors (bounded memory)"""

    def __call__(self, size: int, generator: torch.Generator) -> np.ndarray:
        risks, done = [], 0
        while done < size:
            part = min(self.chunk, size - done)
            if self.n >= self.d:
                S = _wishart(self.chol_x, self.n, part, generator)
                risk = _risks_full_rank(S, self.sigma, self.cov_q, self.precision_w)
            else:
                X = torch.randn(part, self.n, self.d, generator=generator,
                                dtype=torch.float64) @ self.chol_x.T
                risk = _risks_few_examples(X, self.sigma, self.cov_q, self.cov_w)
            risks.append(risk.clamp(min=0.0))
            done += part
        return torch.cat(risks).numpy()


def bayes_risk(
    n: int,
    sigma: float,
    sigma_x: np.ndarray,
    sigma_w: np.ndarray,
    prompts: int = 20_000,
    seed: int = 0,
    sigma_q: np.ndarray | None = None,
) -> tuple[float, float]:
    """(mean, standard error) of the Bayes-optimal predictor's loss, float64, both >= 0;
    exactly (0.0, 0.0) when sigma = 0 and n >= d.

    n >= 1, sigma >= 0, sigma_x (the context's covariates), sigma_w and sigma_q (the query's
    covariance; default sigma_x) (d, d) positive definite, prompts >= 2 (and within
    ``MAX_WORK``: ``check_bayes_prompts``). The same seed gives the same draws of X for every
    sigma_w, sigma_q and sigma (common random numbers across shifted laws).
    """
    d, sigma_x, sigma_w, sigma_q = _checked_laws(n, sigma, sigma_x, sigma_w, sigma_q)
    check_bayes_prompts(d, n, float(sigma), prompts)
    if sigma == 0 and n >= d:
        return 0.0, 0.0
    values = _PromptRisks(n, sigma, sigma_x, sigma_w, sigma_q)(
        prompts, make_generator(seed, "bayes-risk"))
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(values.size))


def bayes_risk_to_stderr(
    n: int,
    sigma: float,
    sigma_x: np.ndarray,
    sigma_w: np.ndarray,
    relative: float,
    seed: int = 0,
    sigma_q: np.ndarray | None = None,
) -> SizedMean:
    """The Bayes risk of ``bayes_risk``'s law drawn until its standard error is at most
    ``relative`` x the risk (``iclab.theory.sized_mean``): blocks of ``BLOCK_PROMPTS``
    prompts, block k from the generator of (seed, k), as many as ``MAX_WORK`` allows at most
    (``reached`` false if that is too few). Exactly 0 (no draws) when sigma = 0 and n >= d.
    The same seed gives every law the same draws of X in the blocks both draw."""
    d, sigma_x, sigma_w, sigma_q = _checked_laws(n, sigma, sigma_x, sigma_w, sigma_q)
    if sigma == 0 and n >= d:
        return SizedMean(0.0, 0.0, 0, 0.0, True)
    risks = _PromptRisks(n, sigma, sigma_x, sigma_w, sigma_q)
    most = max(2, int(MAX_WORK // bayes_work(d, n, float(sigma), BLOCK_PROMPTS)))
    return mean_to_stderr(
        lambda block: risks(BLOCK_PROMPTS, make_generator(seed, "bayes-risk-block", block)),
        relative=relative, first=2, most=min(most, MOST_BLOCKS))
