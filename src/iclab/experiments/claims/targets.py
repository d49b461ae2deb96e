"""What the theorem kinds compare a run with: Theorem 2's target eta* Sigma_x^-1 or the optimum
Gamma*, the reference a Gamma should not be a multiple of (I or Sigma_x^-1), Theorem 1's step
1/(n+d+1+sigma^2), a run's covariances and Gaussian optimum, and the relative errors and
distances between them."""

from __future__ import annotations

import numpy as np

from iclab.config.task_section import option_values
from iclab.experiments.specs.results import RunRecord
from iclab.tasks.family_entry import matrix
from iclab.theory.gaussian import GaussianOptimum, eta_star_isotropic, gaussian_optimum

GAMMA_NAMES = {"optimum": "optimum Gamma*", "preconditioned": "eta* Sigma_x^-1"}
MULTIPLE_NAMES = {"identity": "I", "inverse-cov-x": "Sigma_x^-1"}


def inverse_cov_x(record: RunRecord) -> np.ndarray:
    """Sigma_x^-1 of a run: (d, d)."""
    task = record.point.config.task
    cov_x = option_values(task).get("cov_x")
    if cov_x is None:
        return np.eye(task.d)
    return np.linalg.inv(np.asarray(cov_x, dtype=np.float64))


def run_covariances(record: RunRecord) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The run's Sigma_x and Sigma_w as its task options give them: (d, d) float64, or None
    where the run sets none (the identity)."""
    options = option_values(record.point.config.task)
    return matrix(options.get("cov_x")), matrix(options.get("cov_w"))


def run_gaussian_optimum(record: RunRecord) -> GaussianOptimum:
    """The Gaussian optimum (docs/theory.md) with the run's d, n, sigma, Sigma_x and Sigma_w."""
    task = record.point.config.task
    cov_x, cov_w = run_covariances(record)
    return gaussian_optimum(task.n, task.sigma, cov_x, cov_w, task.d)


def theorem1_eta(record: RunRecord) -> float:
    task = record.point.config.task
    return eta_star_isotropic(task.n, task.d, task.sigma)


def relative_error(gamma: np.ndarray, target: np.ndarray) -> float:
    return float(np.linalg.norm(gamma - target) / np.linalg.norm(target))


def distance_from_multiple(gamma: np.ndarray, reference: np.ndarray) -> float:
    """min_c ||gamma - c reference||_F / ||gamma||_F (0 when gamma is a multiple)."""
    c = float(np.sum(gamma * reference) / np.sum(reference * reference))
    return float(np.linalg.norm(gamma - c * reference) / np.linalg.norm(gamma))


def gamma_target(record: RunRecord, target: str) -> np.ndarray:
    """Gamma* from result.json, or eta* Sigma_x^-1 (Theorem 2's closed form): (d, d)."""
    if target == "optimum":
        return record.gamma_star
    return theorem1_eta(record) * inverse_cov_x(record)


def multiple_reference(record: RunRecord, of: str) -> np.ndarray:
    """I or Sigma_x^-1 of a run: (d, d)."""
    return np.eye(record.point.config.task.d) if of == "identity" else inverse_cov_x(record)


def relative_holds(value: float, theory: float, tolerance: float) -> bool:
    return abs(value / theory - 1.0) <= tolerance
