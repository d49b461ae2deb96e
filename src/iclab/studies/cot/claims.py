"""The ``cot`` claim kind of the Chain of thought section: a trained ``lsa-cot`` against the
exact weight-prediction error of K-step GD (docs/theory.md section 21), the theory computed
here from each run's d, n, sigma and cot_steps (``optimal_constant_step``), the measurement
read from result.json (``outputs.weight_summary``'s keys).

- ``at-gd``: the weight error, mean over seeds, within ``tolerance`` standard errors of the
  exact error of max(K, 1)-step GD at its optimal constant step (no CoT: the one-step optimum).
- ``below-one-step``: the weight error below the exact one-step optimum by more than
  ``tolerance`` standard errors.
- ``falling``: over the group's sites in increasing K, each weight error below the one before
  by more than ``tolerance`` standard errors of the difference.
- ``steps``: the learned steps eta_w and eta_b (eta_b alone for K = 0, where eta_w does not
  act) within ``tolerance`` (relative) of eta*_K, the step of the CoT data.
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import ClassVar

from iclab.config.train import TrainConfig
from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind, seeds_phrase
from iclab.experiments.claims.needs import Need
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.results import Site
from iclab.studies.cot.model import LSACoT
from iclab.studies.cot.outputs import isotropic
from iclab.studies.cot.weights_theory import optimal_constant_step
from iclab.tasks.base import TaskFamily


def _weight_run(config: TrainConfig, task: TaskFamily) -> bool:
    model = config.model_type
    return model is not None and issubclass(model, LSACoT) and isotropic(task)


WEIGHT_RUN = Need("the lsa-cot model on isotropic linear-gaussian prompts (Sigma_x = Sigma_w "
                  "= I, no task pool)", _weight_run)


def site_theory(site: Site) -> tuple[int, float, float, float]:
    """(K, eta*_K, the exact K-step error, the exact one-step error) of the site's runs."""
    config = site.records[0].point.config
    d, n, sigma = config.task.d, config.task.n, float(config.task.sigma)
    steps = int(config.model.cot_steps)
    eta, error = optimal_constant_step(max(steps, 1), n, d, sigma)
    return steps, eta, error, optimal_constant_step(1, n, d, sigma)[1]


def stderr(site: Site) -> float:
    """The standard error of the mean weight error over the site's seeds."""
    return site.mean_stderr("weight_error")


class CoTClaim(ClaimKind):
    name = "cot"
    requires = (WEIGHT_RUN,)
    options: ClassVar[dict[str, tuple[str, ...]]] = {
        "compare": ("at-gd", "below-one-step", "falling", "steps")}
    statements: ClassVar[dict[str, str]] = {
        "at-gd": "the weight error E||w_K - w||^2 is the exact error of K-step GD at its "
                 "optimal step size (no CoT: of one step)",
        "below-one-step": "with chain of thought the weight error is below the exact one-step "
                          "GD optimum, where no CoT stays",
        "falling": "the weight error falls with the number of CoT steps K",
        "steps": "the learned step is the CoT data's GD step eta*_K",
    }

    def check(self, spec: ClaimSpec, group_sites: list[Site],
              context: ClaimContext) -> list[Claim]:
        if self.option(spec) != "falling":
            return super().check(spec, group_sites, context)
        ordered = sorted(group_sites, key=lambda site: site_theory(site)[0])
        claims = []
        for before, after in pairwise(ordered):
            drop = before.mean("weight_error") - after.mean("weight_error")
            se = math.hypot(stderr(before), stderr(after))
            claims.append(self.claim(
                spec, after, drop > spec.tolerance * se,
                f"weight error at K = {site_theory(before)[0]} minus at K = "
                f"{site_theory(after)[0]}, means {seeds_phrase(after)} (standard error "
                f"{se:.2g}); theory: the exact drop; holds when value > tolerance x standard "
                f"error", drop, site_theory(before)[2] - site_theory(after)[2],
                f"{spec.tolerance:g} se"))
        return claims

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        compare, tol = self.option(spec), spec.tolerance
        steps, eta, theory, one_step = site_theory(site)
        value, se = site.mean("weight_error"), stderr(site)
        if compare == "at-gd":
            return self.claim(spec, site, abs(value - theory) <= tol * se,
                              f"weight error, mean {seeds_phrase(site)} (standard error "
                              f"{se:.2g}), against the exact {max(steps, 1)}-step GD error; "
                              f"holds when |value - theory| <= tolerance x standard error",
                              value, theory, f"{tol:g} se")
        if compare == "below-one-step":
            return self.claim(spec, site, one_step - value > tol * se,
                              f"weight error, mean {seeds_phrase(site)} (standard error "
                              f"{se:.2g}), against the exact one-step optimum; holds when "
                              f"theory - value > tolerance x standard error", value, one_step,
                              f"{tol:g} se")
        learned = [site.mean("eta_b")] + ([site.mean("eta_w")] if steps > 0 else [])
        worst = max(learned, key=lambda step: abs(step / eta - 1))
        return self.claim(spec, site, abs(worst / eta - 1) <= tol,
                          f"learned step ({'eta_w and eta_b' if steps else 'eta_b'}; the "
                          f"farther shown), mean {seeds_phrase(site)}, against eta*_"
                          f"{max(steps, 1)}; holds when |value / theory - 1| <= tolerance",
                          worst, eta)


COT_KINDS: tuple[type[ClaimKind], ...] = (CoTClaim,)
