"""The optimal one-layer LSA of a training law under shifted test laws, beside the Bayes loss.

For a linear Gaussian training law (``iclab.tasks.linear_gaussian``) and one shift
(``iclab.studies.shift.laws``: n, sigma, x-scale, query-scale, w-scale, w-mean) at each of several
values, ``shifted_optimum_rows`` gives

- ``lsa_loss``: the exact loss of the training law's optimal LSA, one preconditioned GD step
  x_q^T Gamma* X^T y with the training Gamma* (``iclab.theory.gaussian``), under the test law
  (``iclab.studies.shift.population``; the plain sum over the test law's n examples);
- ``bayes_loss`` and ``bayes_loss_stderr``: the Bayes risk of the TEST law (its posterior mean,
  ``iclab.theory.bayes``, a Rao-Blackwellised Monte Carlo average over X alone; exactly 0 with
  standard error 0 when sigma = 0 and n >= d). Every value's draws come from the same seed
  (common random numbers), so the ratio's change over the values is resolved more finely than
  each value's standard error suggests. Given a ``BayesCache``, a test law's Bayes risk is
  computed once per law, prompts and seed and then read from it (a report's claims, figures and
  measurements share one): every w-mean value, and w-scale and query-scale at 1, have the
  training law's Bayes risk; the numbers are the same as without the cache.

What the curves show (docs/theory.md section 13): under query-scale c the ratio
lsa_loss / bayes_loss is (c^2 a + sigma^2) / (c^2 b + sigma^2), bounded by a / b; under w-scale
c the LSA's loss is a quadratic c^2 (L* - b_0) + b_0 while the Bayes loss saturates, so the
ratio grows like c^2 at fixed n, and its growth from c = 1 to c = 4 falls as n grows.
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from iclab.studies.shift.laws import GaussianTestLaw, check_value, shifted_law
from iclab.studies.shift.population import gd_readout, shifted_population_loss
from iclab.tasks.base import TaskFamily
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.bayes import bayes_risk, bayes_risk_to_stderr, check_bayes_prompts
from iclab.theory.gaussian import gaussian_optimum
from iclab.utils.errors import ConfigError


@dataclass(frozen=True)
class ShiftedOptimumRow:
    """One test law: the shift's value, the optimal LSA's exact loss, the Bayes loss (None
    when not asked for) and its standard error (0 where it is exact)."""

    value: float
    lsa_loss: float
    bayes_loss: float | None
    bayes_loss_stderr: float | None

    @property
    def ratio(self) -> float | None:
        """lsa_loss / bayes_loss, or None where the Bayes loss is 0 or not computed."""
        if self.bayes_loss is None or self.bayes_loss <= 0:
            return None
        return self.lsa_loss / self.bayes_loss

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "lsa_loss": self.lsa_loss, "bayes_loss": self.bayes_loss,
                "bayes_loss_stderr": self.bayes_loss_stderr, "ratio": self.ratio}


def shift_base(task: TaskFamily) -> LinearGaussian:
    """The training law as a ``LinearGaussian``; ConfigError for a family without one (a
    non-Gaussian covariate law, correlated contexts, a nonlinear or user family)."""
    if not isinstance(task, LinearGaussian):
        raise ConfigError(f"--shift needs a linear Gaussian family with Gaussian independent "
                          f"covariates (linear-gaussian, anisotropic), not {task.name!r}")
    return task


BayesCache = MutableMapping[tuple[Any, ...], tuple[float, float]]
"""Bayes risks already computed: (the law's n, sigma, covariances as bytes, prompts or
("stderr", the relative standard error asked for), seed) -> (mean, standard error)."""


def test_law_bayes(law: GaussianTestLaw, prompts: int, seed: int,
                   cache: BayesCache | None = None,
                   relative: float | None = None) -> tuple[float, float]:
    """(mean, standard error) of the Bayes risk of ``law`` (its mean w does not enter), from
    ``prompts`` prompts, or, given ``relative``, drawn until its standard error is at most
    ``relative`` x the risk (``bayes_risk_to_stderr``; ``prompts`` is not used). Read from
    ``cache`` when it holds the same law, count or target, and seed (and stored there if not)."""
    size: tuple[Any, ...] = (prompts,) if relative is None else ("stderr", relative)
    key = (law.d, law.n, law.sigma, law.cov_x.tobytes(), law.cov_q.tobytes(),
           law.cov_w.tobytes(), *size, seed)
    if cache is not None and key in cache:
        return cache[key]
    if relative is None:
        risk = bayes_risk(law.n, law.sigma, law.cov_x, law.cov_w, prompts, seed,
                          sigma_q=law.cov_q)
    else:
        sized = bayes_risk_to_stderr(law.n, law.sigma, law.cov_x, law.cov_w, relative, seed,
                                     sigma_q=law.cov_q)
        risk = (sized.mean, sized.stderr)
    if cache is not None:
        cache[key] = risk
    return risk


def shifted_optimum_rows(
    task: TaskFamily,
    kind: str,
    values: Sequence[float],
    bayes_prompts: int = 20_000,
    seed: int = 0,
    cache: BayesCache | None = None,
    bayes_stderr: float | None = None,
) -> list[ShiftedOptimumRow]:
    """One row per value of the ``kind`` shift of ``task``'s law (``bayes_prompts = 0``: no
    Bayes loss; ``cache``: Bayes risks to reuse, see ``test_law_bayes``; ``bayes_stderr``: each
    Bayes risk drawn to this relative standard error instead of from ``bayes_prompts``
    prompts). Every value and the Bayes work at every value are checked (ConfigError) before
    anything is computed."""
    base = shift_base(task)
    if len(values) == 0:
        raise ConfigError("give at least one value of the shift")
    laws = [shifted_law(base, kind, check_value(kind, value)) for value in values]
    if bayes_prompts != 0 and bayes_stderr is None:
        for law in laws:
            check_bayes_prompts(law.d, law.n, law.sigma, bayes_prompts, "--bayes-prompts")
    optimum = gaussian_optimum(base.n, base.sigma, base.sigma_x, base.sigma_w)
    u, M = gd_readout(np.asarray(optimum.gamma, dtype=np.float64))
    rows = []
    for value, law in zip(values, laws, strict=True):
        bayes, stderr = (None, None) if bayes_prompts == 0 else test_law_bayes(
            law, bayes_prompts, seed, cache, bayes_stderr)
        rows.append(ShiftedOptimumRow(float(check_value(kind, value)),
                                      shifted_population_loss(u, M, law), bayes, stderr))
    return rows
