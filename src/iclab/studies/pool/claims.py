"""Claim kinds of the Task diversity section: a one-layer LSA trained on a finite task pool
against the pool's exact optimum (docs/theory.md section 15).

- ``pool-optimum`` (per site): the mean over seeds of the trained model's loss on its pool
  (result.json's ``test_loss_pool``) against the mean of the pool's exact global optimum
  (``loss_star``; each seed draws its own pool with ``tasks``) and the mean of the local
  minimum of the exact pool loss that the trained weights lie in (``loss_local``: L-BFGS from
  them, section 15.2; the global optimum for models without a read-out). Holds when
  value >= theory - 4 se (no one-layer LSA beats the global optimum) and
  value <= (1 + tolerance) x local + 4 se (training reached its minimum), se the standard
  error of the mean measured loss. The pool loss has non-global local minima, so local may
  lie above theory: the report shows both.
- ``pool-nuisance`` (per site): the exact gap g* = L*_nf / L* - 1 between the nuisance-free
  optimum L*_nf and the full one L*, and the learned gap g = L*_nf / test_loss_pool - 1. The
  gap is resolvable when L*_nf - L* > tolerance x L* + 8 se (the optimisation tolerance of
  ``pool-optimum`` and twice its 4 se): there the trained model must beat the nuisance-free
  optimum by more than 4 standard errors (it uses its nuisance weights). Elsewhere the
  learned gap must be the exact one to the precision ``pool-optimum`` allows:
  |g - g*| <= (L*_nf / loss) (tolerance + 4 se / L*).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind, seeds_phrase
from iclab.experiments.claims.needs import POOL
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.results import Site
from iclab.utils.errors import ConfigError

STANDARD_ERRORS = 4.0


def pool_numbers(site: Site) -> tuple[float, float, float, float]:
    """(mean test_loss_pool, its standard error, mean loss_star, mean
    loss_star_nuisance_free) over the site's seeds; ConfigError for runs without a pool."""
    results = [record.result for record in site.records]
    if any("test_loss_pool" not in result for result in results):
        raise ConfigError(f"the pool claim kinds need runs with tasks or task_pool; site "
                          f"{site.label!r} has none")
    errors = [float(result["test_loss_pool_stderr"]) for result in results]
    se = math.sqrt(sum(e**2 for e in errors)) / len(errors)
    return (site.mean("test_loss_pool"), se, site.mean("loss_star"),
            site.mean("loss_star_nuisance_free"))


class PoolOptimumClaim(ClaimKind):
    name = "pool-optimum"
    requires = (POOL,)
    statements: ClassVar[dict[str, str]] = {
        "": "the trained LSA's loss on its task pool is never below the pool's exact optimal "
            "one-layer LSA loss (nuisance terms included) and reaches the local minimum of "
            "the exact pool loss its weights lie in"}

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        value, se, theory, _ = pool_numbers(site)
        local = float(np.mean([float(record.result.get("loss_local", record.result[
            "loss_star"])) for record in site.records]))
        holds = theory - STANDARD_ERRORS * se <= value <= \
            (1 + spec.tolerance) * local + STANDARD_ERRORS * se
        return self.claim(
            spec, site, holds,
            f"mean {seeds_phrase(site)} of the loss on the pool vs the pool's exact global "
            f"optimum; holds when theory - 4 se <= value <= (1 + tolerance) x {local:.5g} "
            f"(the local minimum of the trained weights) + 4 se (se = {se:.3g})",
            value, theory)


class PoolNuisanceClaim(ClaimKind):
    name = "pool-nuisance"
    requires = (POOL,)
    statements: ClassVar[dict[str, str]] = {
        "": "the trained LSA beats the nuisance-free optimum exactly where the pool's "
            "optimum does (its gap L*_nf / L* - 1)"}

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        value_loss, se, star, free = pool_numbers(site)
        theory, value = free / star - 1.0, free / value_loss - 1.0
        if free - star > spec.tolerance * star + 2 * STANDARD_ERRORS * se:
            holds = value_loss + STANDARD_ERRORS * se < free
            rule = ("the exact gap is resolvable (L*_nf - L* > tolerance x L* + 8 se): holds "
                    "when the loss + 4 se is below L*_nf")
        else:
            bound = free / value_loss * (spec.tolerance + STANDARD_ERRORS * se / star)
            holds = abs(value - theory) <= bound
            rule = f"holds when |value - theory| <= {bound:.3g} (L*_nf/loss (tol + 4 se/L*))"
        return self.claim(
            spec, site, bool(np.isfinite(value)) and holds,
            f"mean {seeds_phrase(site)} of L*_nf / loss - 1 vs L*_nf / L* - 1; {rule}",
            value, theory)


POOL_KINDS: tuple[type[ClaimKind], ...] = (PoolOptimumClaim, PoolNuisanceClaim)
"""The Task diversity section's claim kinds, registered with the built-ins."""
