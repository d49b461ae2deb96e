"""The optimal one-layer LSA for linear tasks with any covariate law (docs/theory.md section 11).

With w ~ N(0, Sigma_w), symmetric noise and x with any law of finite fourth moments,
E[x x^T] = Sigma_x, the nuisance terms of the LSA are even in (w, eps) and its GD term odd,
so the optimum is x_q^T Gamma X^T y with

    F = n M4 + n sigma^2 Sigma_x + n (n-1) Sigma_x Sigma_w Sigma_x,   M4 = E[x x^T Sigma_w x x^T],
    Gamma* = n Sigma_w Sigma_x F^{-1},
    L* = tr(Sigma_x Sigma_w) + sigma^2 - n tr(Sigma_x Gamma* Sigma_x Sigma_w)

(the convention of ``iclab.theory.gaussian``: there F = n K). M4 is

- ``closed-form`` for a product law (independent standardised coordinates with fourth moment
  mu4) and x = S z, S = Sigma_x^(1/2) symmetric: with B = S A S,
  E[x x^T A x x^T] = S (B + B^T + tr(B) I + (mu4 - 3) diag(B)) S ("diag" keeps the diagonal).
  The Gaussian law (mu4 = 3) gives back ``iclab.theory.gaussian``.
- ``monte-carlo`` otherwise: M4 is the mean of Q = (x^T Sigma_w x) x x^T over ``draws`` draws
  of x, plugged into the formulas above. Standard errors by the delta method: Gamma, eta and
  L* are smooth functions of M4 (dGamma = -n Gamma dM4 F^{-1}), and Cov(M4-hat) is the sample
  covariance of Q's distinct entries over ``draws``. They need E|x|^8 < infinity.

Correlated contexts (Gaussian law) are ``iclab.studies.covariates.correlated`` (section 12).

A task is asked, not inspected: anything with the attributes of ``LawTask`` (the linear
family's ``iclab.studies.covariates.linear_law.LinearLawTask`` declares them) has an optimum here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch

from iclab.studies.covariates.correlated import correlated_optimum
from iclab.studies.covariates.laws import CovariateLaw
from iclab.tasks.covariance import symmetric_sqrt
from iclab.theory.optimum import CLOSED_FORM, MONTE_CARLO, FamilyOptimum
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

DEFAULT_DRAWS = 200_000
CHUNK = 50_000
ISOTROPY_RTOL = 1e-12


class LawTask(Protocol):
    """What the optimum needs of a linear task with a covariate law: n, sigma, Sigma_x and
    Sigma_w ((d, d) float64), the law, and the (n+1, n+1) position covariance R of its
    correlated contexts (``correlated``: whether R is not the identity)."""

    @property
    def n(self) -> int: ...

    @property
    def sigma(self) -> float: ...

    @property
    def sigma_x(self) -> np.ndarray: ...

    @property
    def sigma_w(self) -> np.ndarray: ...

    @property
    def covariate_law(self) -> CovariateLaw: ...

    @property
    def correlated(self) -> bool: ...

    @property
    def position_covariance(self) -> np.ndarray: ...


def product_fourth_moment(A: np.ndarray, sigma_x: np.ndarray, mu4: float) -> np.ndarray:
    """E[x x^T A x x^T] for x = Sigma_x^(1/2) z, z with iid standardised coordinates of fourth
    moment mu4: (d, d). A: (d, d), any matrix."""
    S = symmetric_sqrt(np.asarray(sigma_x, dtype=np.float64))
    B = S @ A @ S
    inner = B + B.T + np.trace(B) * np.eye(len(B)) + (mu4 - 3.0) * np.diag(np.diag(B))
    moment: np.ndarray = S @ inner @ S
    return moment


def optimum_from_moment(
    n: int, sigma: float, sigma_x: np.ndarray, sigma_w: np.ndarray, m4: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float]:
    """Gamma* = n Sigma_w Sigma_x F^{-1}, F (both (d, d)) and L* for M4 = E[x x^T Sigma_w x x^T]."""
    sxsw = sigma_x @ sigma_w
    F = n * m4 + n * sigma**2 * sigma_x + n * (n - 1) * sxsw @ sigma_x
    gamma = np.linalg.solve(F.T, (n * sigma_w @ sigma_x).T).T
    loss = float(np.trace(sxsw) + sigma**2 - n * np.trace(sigma_x @ gamma @ sxsw))
    return gamma, F, loss


def _is_multiple_of_identity(gamma: np.ndarray) -> tuple[bool, float]:
    eta = float(np.trace(gamma) / len(gamma))
    scale = max(float(np.linalg.norm(gamma)), 1e-300)
    return bool(np.linalg.norm(gamma - eta * np.eye(len(gamma))) <= ISOTROPY_RTOL * scale), eta


def _scalar_matrix(matrix: np.ndarray) -> bool:
    return bool(np.array_equal(matrix, matrix[0, 0] * np.eye(len(matrix))))


@dataclass(frozen=True)
class FourthMomentEstimate:
    """M4 = E[x x^T Sigma_w x x^T] by Monte Carlo: mean (d, d); covariance (p, p) of the mean's
    distinct entries (rows, cols = upper-triangle indices, p = d (d+1) / 2); draws."""

    mean: np.ndarray
    covariance: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    draws: int


def estimate_fourth_moment(
    law: CovariateLaw, sigma_x: np.ndarray, sigma_w: np.ndarray, draws: int = DEFAULT_DRAWS,
    seed: int = 0,
) -> FourthMomentEstimate:
    """The mean of Q = (x^T Sigma_w x) x x^T over ``draws`` x = Sigma_x^(1/2) z (float64,
    seeded streams "covariate-moment", one per chunk) and the covariance of that mean."""
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 2:
        raise ConfigError(f"draws must be an integer >= 2, got {draws!r}")
    d = len(sigma_x)
    root = torch.as_tensor(symmetric_sqrt(sigma_x))
    sw = torch.as_tensor(np.asarray(sigma_w, dtype=np.float64))
    rows, cols = np.triu_indices(d)
    r, c = torch.as_tensor(rows), torch.as_tensor(cols)
    total = torch.zeros(len(rows), dtype=torch.float64)
    outer = torch.zeros(len(rows), len(rows), dtype=torch.float64)
    done, index = 0, 0
    while done < draws:
        size = min(CHUNK, draws - done)
        generator = make_generator(seed, "covariate-moment", index)
        z = law.sample_standard((size, d), generator, torch.float64)
        x = z @ root                                                   # (size, d)
        quadratic = torch.einsum("ka,ab,kb->k", x, sw, x)              # (size,)
        q = quadratic[:, None] * x[:, r] * x[:, c]                     # (size, p)
        total += q.sum(0)
        outer += q.T @ q
        done, index = done + size, index + 1
    mean = total / draws
    sample_cov = (outer - draws * torch.outer(mean, mean)) / (draws - 1)
    m4 = np.zeros((d, d))
    m4[rows, cols] = mean.numpy()
    m4[cols, rows] = mean.numpy()
    return FourthMomentEstimate(m4, sample_cov.numpy() / draws, rows, cols, draws)


def _delta_stderr(
    n: int, gamma: np.ndarray, F: np.ndarray, sigma_x: np.ndarray, sigma_w: np.ndarray,
    estimate: FourthMomentEstimate,
) -> dict[str, Any]:
    """Delta-method standard errors of Gamma (d, d), eta and L* from Cov(M4-hat)."""
    d = len(gamma)
    F_inv = np.linalg.inv(F)
    # dGamma_ab / dM_ce = -n Gamma_ac F^-1_eb; a distinct entry (c, e) moves M_ce and M_ec.
    full = -n * np.einsum("ac,eb->abce", gamma, F_inv)                 # (d, d, d, d)
    rows, cols = estimate.rows, estimate.cols
    jac = full[:, :, rows, cols] + np.where(rows == cols, 0.0, 1.0) * full[:, :, cols, rows]
    jac = jac.reshape(d * d, -1)                                       # (d^2, p)
    cov_gamma = jac @ estimate.covariance @ jac.T
    grad_eta = np.eye(d).reshape(-1) / d
    grad_loss = -n * (sigma_x @ sigma_w @ sigma_x).T.reshape(-1)       # dL/dGamma
    return {
        "gamma": np.sqrt(np.clip(np.diag(cov_gamma), 0, None)).reshape(d, d).tolist(),
        "eta": math.sqrt(max(float(grad_eta @ cov_gamma @ grad_eta), 0.0)),
        "loss": math.sqrt(max(float(grad_loss @ cov_gamma @ grad_loss), 0.0)),
    }


@dataclass(frozen=True)
class CovariateOptimum:
    """The optimal LSA of a ``LinearLawTask``.

    gamma: (d, d) Gamma*; eta: where Gamma* = eta I (else None); loss: L*; method:
    "closed-form" or "monte-carlo"; stderr: Monte Carlo standard errors by name ("gamma",
    "eta", "loss"), None for closed forms; draws: Monte Carlo sample size; law: the law's spec;
    n_eff and independent_loss: for correlated contexts, the effective context length and the
    optimal loss of n independent examples (``iclab.studies.covariates.correlated``), else None.
    """

    gamma: np.ndarray
    eta: float | None
    loss: float
    isotropic: bool
    method: str
    law: str
    stderr: dict[str, Any] | None = None
    draws: int | None = None
    n_eff: float | None = None
    independent_loss: float | None = None

    def as_family_optimum(self) -> FamilyOptimum:
        """The same optimum as a ``FamilyOptimum`` (n_eff included; law and independent_loss
        left out)."""
        return FamilyOptimum(gamma=self.gamma, eta=self.eta, loss=self.loss,
                             isotropic=self.isotropic, method=self.method, stderr=self.stderr,
                             draws=self.draws, n_eff=self.n_eff)

    def to_json(self) -> dict[str, Any]:
        """FamilyOptimum's keys (n_eff among them) plus law and independent_loss."""
        return {**self.as_family_optimum().to_json(), "law": self.law,
                "independent_loss": self.independent_loss}


def covariate_optimum(
    task: LawTask, monte_carlo: bool = False, draws: int = DEFAULT_DRAWS, seed: int = 0
) -> CovariateOptimum:
    """The optimum of ``task``: closed form for correlated Gaussian contexts and for product
    laws with a known fourth moment, Monte Carlo otherwise or when ``monte_carlo`` (a check of
    the closed form; not for correlated contexts)."""
    n, sigma, sx, sw = task.n, float(task.sigma), task.sigma_x, task.sigma_w
    law = task.covariate_law
    if task.correlated:
        if monte_carlo:
            raise ConfigError("correlated contexts have a closed-form optimum only; "
                              "Monte Carlo applies to independent examples")
        corr = correlated_optimum(task.position_covariance, sigma, sx, sw)
        return CovariateOptimum(corr.gamma, corr.eta, corr.loss, corr.isotropic, CLOSED_FORM,
                                law.spec, n_eff=corr.n_eff,
                                independent_loss=corr.independent_loss)
    mu4 = law.fourth_moment
    if law.product and mu4 is not None and not monte_carlo:
        gamma, _, loss = optimum_from_moment(n, sigma, sx, sw, product_fourth_moment(sw, sx, mu4))
        isotropic, eta = _is_multiple_of_identity(gamma)
        return CovariateOptimum(gamma, eta if isotropic else None, loss, isotropic, CLOSED_FORM,
                                law.spec)
    estimate = estimate_fourth_moment(law, sx, sw, draws, seed)
    gamma, F, loss = optimum_from_moment(n, sigma, sx, sw, estimate.mean)
    stderr = _delta_stderr(n, gamma, F, sx, sw, estimate)
    # Gamma* = eta I by symmetry: iid coordinates and scalar covariances (M4(I) is then a
    # multiple of I); for other Monte Carlo laws isotropy is not decided.
    isotropic = law.product and _scalar_matrix(sx) and _scalar_matrix(sw)
    eta = float(np.trace(gamma) / len(gamma))
    if not isotropic:
        stderr.pop("eta")
    return CovariateOptimum(gamma, eta if isotropic else None, loss, isotropic, MONTE_CARLO,
                            law.spec, stderr=stderr, draws=estimate.draws)
