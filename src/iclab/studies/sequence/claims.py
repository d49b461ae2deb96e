"""The ``wpgd`` claim kind of the Sequence models section: a trained h3 or gla model against
the exact optimum of weighted preconditioned GD (docs/theory.md section 19), read from
result.json (``outputs.WPGDReadoutOutput``'s keys and the test loss).

- ``at-optimum``: the mean test loss over seeds within ``tolerance`` (relative) of
  loss_star_wpgd, |value / theory - 1| <= tolerance.
- ``below-lsa``: the mean test loss below the optimal one-layer LSA's loss loss_star_lsa by
  more than ``tolerance`` standard errors of the mean.
- ``weights``: the read-out's weights against the optimal ones, the mean over seeds of
  ||omega - omega*|| / ||omega*|| (both summing to n) at most ``tolerance``.
"""

from __future__ import annotations

from typing import ClassVar

from iclab.config.train import TrainConfig
from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind, seeds_phrase
from iclab.experiments.claims.needs import Need
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.results import Site
from iclab.studies.sequence.family import drift_of
from iclab.studies.sequence.gla import GatedLinearAttention
from iclab.studies.sequence.h3 import H3
from iclab.tasks.base import TaskFamily


def _has_wpgd_readout(config: TrainConfig, task: TaskFamily) -> bool:
    model = config.model_type
    return model is not None and issubclass(model, H3 | GatedLinearAttention) \
        and drift_of(task) is not None


WPGD_READOUT = Need("a model with a WPGD read-out (h3, gla) on drifting-linear or isotropic "
                    "linear-gaussian", _has_wpgd_readout)


def _stderr(site: Site) -> float:
    """The standard error of the mean test loss over the site's seeds."""
    return site.mean_stderr("test_loss")


class WPGDClaim(ClaimKind):
    name = "wpgd"
    requires = (WPGD_READOUT,)
    options: ClassVar[dict[str, tuple[str, ...]]] = {
        "compare": ("at-optimum", "below-lsa", "weights")}
    statements: ClassVar[dict[str, str]] = {
        "at-optimum": "the model's test loss is the exact optimum of weighted preconditioned "
                      "GD, loss_star_wpgd",
        "below-lsa": "the model's test loss is below the optimal one-layer LSA's loss",
        "weights": "the model's read-out weights omega are the optimal weights omega*",
    }

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        compare, tol = self.option(spec), spec.tolerance
        value = site.mean("test_loss")
        if compare == "at-optimum":
            theory = site.mean("loss_star_wpgd")
            return self.claim(spec, site, abs(value / theory - 1) <= tol,
                              f"test loss, mean {seeds_phrase(site)}, against loss_star_wpgd "
                              f"(exact); holds when |value / theory - 1| <= tolerance",
                              value, theory, f"{tol:g}")
        if compare == "below-lsa":
            theory, se = site.mean("loss_star_lsa"), _stderr(site)
            return self.claim(spec, site, theory - value > tol * se,
                              f"test loss, mean {seeds_phrase(site)} (standard error "
                              f"{se:.2g}), against loss_star_lsa (exact); holds when theory - "
                              f"value > tolerance x standard error", value, theory,
                              f"{tol:g} se")
        error = site.mean("omega_error")
        return self.claim(spec, site, error <= tol,
                          f"||omega - omega*|| / ||omega*||, mean {seeds_phrase(site)} "
                          f"(omega: the read-out's, omega*: the exact optimum's, both summing "
                          f"to n); holds when <= tolerance", error, 0.0, f"{tol:g}")


WPGD_KINDS: tuple[type[ClaimKind], ...] = (WPGDClaim,)
"""The Sequence models section's claim kinds."""
