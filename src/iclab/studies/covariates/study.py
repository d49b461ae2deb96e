"""The ``covariates`` study: linear tasks whose covariates are not Gaussian, or whose
positions are correlated (docs/theory.md sections 11 and 12). The covariate laws
(``laws``, a user's law: ``user_law``), the family they make (``linear_law``: the ``x_law``,
``context_correlation`` and ``context_covariance`` options it adds to ``linear-gaussian``),
the optimal one-layer LSA of any law (``optimum``) and of correlated contexts
(``correlated``), and the Covariates section's claim kinds (``claims``). Its one declaration,
``STUDY``, is listed under the ``iclab.studies`` entry points like a user's installed
study."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from iclab.experiments.specs.builtin import reproduce_sections
from iclab.studies.covariates.claims import COVARIATE_KINDS
from iclab.studies.covariates.laws import DEFAULT_LAW
from iclab.studies.covariates.linear_law import linear_family
from iclab.tasks.base import TaskFamily
from iclab.tasks.covariance import load_covariance
from iclab.tasks.family_entry import FamilyExtension, LinearGaussianOptions, matrix
from iclab.utils.fields import setting
from iclab.utils.studies import Study


@dataclass(frozen=True)
class CovariateOptions:
    """The options the covariates study adds to ``linear-gaussian``."""

    x_law: str = setting(
        DEFAULT_LAW, "Law of the covariates, x = Sigma_x^(1/2) z: gaussian, uniform, rademacher, "
        "laplace, student-t:NU (4 < NU <= 1e6) or MODULE:FUNCTION (linear-gaussian only).",
        omit_default=True)
    context_correlation: float | None = setting(
        None, "AR(1) correlation rho in (-1, 1) between a prompt's positions, the query "
        "last (linear-gaussian, gaussian x_law).", omit_default=True)
    context_covariance: list[list[float]] | None = setting(
        None, "Covariance R of a prompt's positions as an (n+1, n+1) .npy file, the query "
        "last (linear-gaussian, gaussian x_law).", omit_default=True,
        load=lambda path, d, n: load_covariance(path, n + 1))


def _with_law(family: TaskFamily, options: CovariateOptions,
              family_options: LinearGaussianOptions, seed: int) -> TaskFamily:
    """``family`` itself with the Gaussian law and independent positions; else the linear
    family of this law or these correlations, from the same covariances."""
    if options == CovariateOptions():
        return family
    made: TaskFamily = linear_family(
        family.d, family.n, float(family.sigma), matrix(family_options.cov_x),
        matrix(family_options.cov_w), options.x_law, options.context_correlation,
        matrix(options.context_covariance))
    return made


COVARIATE_EXTENSION = FamilyExtension("covariates", ("linear-gaussian",), CovariateOptions,
                                      _with_law)

HERE = Path(__file__).parent
"""The study's folder: its sections of iclab reproduce."""

STUDY = Study(
    "covariates",
    "linear tasks with non-Gaussian covariate laws or correlated contexts, and their exact "
    "optimum",
    claim_kinds=lambda: tuple(kind() for kind in COVARIATE_KINDS),
    family_extensions=lambda: (COVARIATE_EXTENSION,),
    spec_sections=lambda: reproduce_sections(HERE),
)
