"""The optimal one-layer LSA for any task family, by closed form where known, else Monte Carlo.

- linear Gaussian (and the anisotropic control, Sigma_w = diag(lambda)): Gamma* = Sigma_w
  Sigma_x K^{-1} and L* in closed form (``iclab.theory.gaussian``); eta* where Gamma* is a
  multiple of the identity; the Bayes risk by Monte Carlo (``iclab.theory.bayes``).
- relu and two-layer relu: one step of plain GD with eta = 1/(n + 2d + 3 + 4 sigma^2 d) and
  L* = 1/2 + sigma^2 - n eta / 4 (``iclab.theory.rotation_invariant``).
- a user family declared rotation-invariant: eta and L* by the Monte Carlo ratio estimate.
- any other user family: the span optimum by least squares (``iclab.theory.span``).
- a linear family that declares a ``covariate_law`` (a non-Gaussian law of the covariates or
  correlated contexts, the covariates study): the family's own optimum (``own_optimum``), closed
  form for product laws with a known fourth moment and for correlated Gaussian contexts (with
  the effective context length n_eff), Monte Carlo over the covariates otherwise
  (docs/theory.md sections 11 and 12).

``monte_carlo=True`` estimates even where a closed form exists (a check of the closed form):
the ratio estimate for rotation-invariant families (per-network exact integrals for two-layer
relu), the span optimum for Gaussian ones, the fourth-moment estimate for covariate laws.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from iclab.tasks.base import TaskFamily
from iclab.tasks.nonlinear import TwoLayerReluTask
from iclab.theory.bayes import bayes_risk
from iclab.theory.gaussian import gaussian_optimum
from iclab.theory.optimum import CLOSED_FORM, MONTE_CARLO, FamilyOptimum
from iclab.theory.rotation_invariant import (
    DEFAULT_PRECISION,
    GDOptimum,
    estimate_gd_optimum,
    gd_optimum_from_moments,
    generic_moment_draws,
    two_layer_moment_draws,
)
from iclab.theory.span import span_optimum

__all__ = ["CLOSED_FORM", "MONTE_CARLO", "FamilyOptimum", "family_optimum"]


def _from_gd(d: int, gd: GDOptimum, method: str) -> FamilyOptimum:
    stderr = {"eta": gd.eta_stderr, "loss": gd.loss_stderr} if method == MONTE_CARLO else None
    return FamilyOptimum(
        gamma=gd.eta * np.eye(d), eta=gd.eta, loss=gd.loss, isotropic=True, method=method,
        stderr=stderr, draws=gd.draws if method == MONTE_CARLO else None,
    )


def _gaussian_covariances(task: TaskFamily) -> tuple[np.ndarray, np.ndarray]:
    """Sigma_x, Sigma_w of a family that declares ``gaussian``."""
    return np.asarray(getattr(task, "sigma_x")), np.asarray(getattr(task, "sigma_w"))  # noqa: B009


def _gaussian(task: TaskFamily, monte_carlo: bool, seed: int) -> FamilyOptimum:
    sigma_x, sigma_w = _gaussian_covariances(task)
    closed = gaussian_optimum(task.n, task.sigma, sigma_x, sigma_w)
    if not monte_carlo:
        return FamilyOptimum(
            gamma=closed.gamma, eta=closed.eta if closed.isotropic else None, loss=closed.loss,
            isotropic=closed.isotropic, method=CLOSED_FORM,
        )
    return _span(task, seed, isotropic=closed.isotropic)


def _span(task: TaskFamily, seed: int, isotropic: bool) -> FamilyOptimum:
    span = span_optimum(task, seed=seed)
    stderr: dict[str, Any] = {"loss": span.loss_stderr, "gamma": span.gamma_stderr.tolist()}
    if isotropic:
        stderr["eta"] = span.eta_stderr
    return FamilyOptimum(
        gamma=span.gamma, eta=span.eta if isotropic else None, loss=span.loss,
        isotropic=isotropic, method=MONTE_CARLO, stderr=stderr, draws=span.fit_prompts,
    )


def family_optimum(
    task: TaskFamily,
    monte_carlo: bool = False,
    precision: float = DEFAULT_PRECISION,
    seed: int = 0,
    bayes: bool = False,
    bayes_prompts: int = 20_000,
) -> FamilyOptimum:
    """The optimal LSA of ``task``; see the module docstring.

    precision: the Monte Carlo ratio estimate stops once stderr(eta) <= precision * eta;
    bayes: also estimate the Bayes risk (linear Gaussian families only) from ``bayes_prompts``;
    ``precision`` and ``bayes`` do not apply to covariate laws (their Monte Carlo uses a fixed
    number of draws, ``iclab.studies.covariates.optimum.DEFAULT_DRAWS``).
    """
    d, n, sigma = task.d, task.n, float(task.sigma)
    own = task.own_optimum(monte_carlo, seed)  # a family that declares its own optimum
    if own is not None:
        optimum: FamilyOptimum = own
        return optimum
    if task.gaussian:
        optimum = _gaussian(task, monte_carlo, seed)
        if not bayes:
            return optimum
        sigma_x, sigma_w = _gaussian_covariances(task)
        risk, risk_se = bayes_risk(n, sigma, sigma_x, sigma_w, bayes_prompts, seed)
        return replace(optimum, bayes_loss=risk, bayes_loss_stderr=risk_se)
    if not task.rotation_invariant:
        return _span(task, seed, isotropic=False)
    moments = task.gd_moments()
    if moments is not None and not monte_carlo:
        eta, loss = gd_optimum_from_moments(n, d, sigma, *moments)
        return _from_gd(d, GDOptimum(eta, loss, 0.0, 0.0, 0), CLOSED_FORM)
    if isinstance(task, TwoLayerReluTask):  # its weights give the moments of f directly
        draws = two_layer_moment_draws(task)
    else:
        draws = generic_moment_draws(task.draw_values, d)
    return _from_gd(d, estimate_gd_optimum(draws, n, d, sigma, precision, seed), MONTE_CARLO)
