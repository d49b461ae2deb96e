"""Claim kinds of the Task diversity section: a one-layer LSA trained on a finite task pool
against the pool's exact optimum (docs/theory.md section 15). Each is one rule with one
relative tolerance; the exact numbers are the mean over seeds (each seed draws its own pool).

- ``pool-optimum`` (per site): value = the mean of the trained model's loss on its pool
  (result.json's ``test_loss_pool``); theory = the mean of the pool's exact global optimum
  (``loss_star``) and ``local`` the mean of the local minimum of the exact pool loss that the
  trained weights lie in (``loss_local``: L-BFGS from them, section 15.2; the global optimum for
  models without a read-out). Holds when (1 - tolerance) x theory <= value <= (1 + tolerance) x
  local: no one-layer LSA beats the global optimum, and training reached its minimum. The pool
  loss has non-global local minima, so local may lie above theory: the report shows both.
- ``pool-nuisance`` (per site): the learned gap g = L*_nf / value - 1 between the nuisance-free
  optimum L*_nf (``loss_star_nuisance_free``) and the trained model's loss, against the exact gap
  of the minimum its weights lie in, g* = L*_nf / local - 1 (the full optimum's L*_nf / L* - 1
  where local is the global one). Holds when |g - g*| <= tolerance: where g* is larger than the
  tolerance the trained model uses its nuisance weights to beat the nuisance-free optimum by
  the exact margin. L*_nf enters g and g* alike, so what training tests is the full optimum's
  margin below it (a pool optimum off by 5 % fails, tests/experiments/claims/test_pool.py).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind, seeds_phrase
from iclab.experiments.claims.needs import POOL
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.results import Site
from iclab.utils.errors import ConfigError


def pool_numbers(site: Site) -> tuple[float, float, float, float]:
    """(mean test_loss_pool, mean loss_star, mean loss_local (loss_star where a run has none),
    mean loss_star_nuisance_free) over the site's seeds; ConfigError for runs without a pool."""
    results = [record.result for record in site.records]
    if any("test_loss_pool" not in result for result in results):
        raise ConfigError(f"the pool claim kinds need runs with tasks or task_pool; site "
                          f"{site.label!r} has none")
    local = float(np.mean([float(result.get("loss_local", result["loss_star"]))
                           for result in results]))
    return (site.mean("test_loss_pool"), site.mean("loss_star"), local,
            site.mean("loss_star_nuisance_free"))


class PoolOptimumClaim(ClaimKind):
    name = "pool-optimum"
    requires = (POOL,)
    statements: ClassVar[dict[str, str]] = {
        "": "the trained LSA's loss on its task pool is never below the pool's exact optimal "
            "one-layer LSA loss (nuisance terms included) and reaches the local minimum of "
            "the exact pool loss its weights lie in"}

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        value, theory, local, _ = pool_numbers(site)
        tol = spec.tolerance
        holds = (1 - tol) * theory <= value <= (1 + tol) * local
        return self.claim(
            spec, site, holds,
            f"mean {seeds_phrase(site)} of the loss on the pool vs the pool's exact global "
            f"optimum; holds when (1 - tolerance) x theory <= value <= (1 + tolerance) x "
            f"{local:.5g} (the local minimum of the trained weights)", value, theory,
            f"{100 * tol:g}% below theory, above local")


class PoolNuisanceClaim(ClaimKind):
    name = "pool-nuisance"
    requires = (POOL,)
    statements: ClassVar[dict[str, str]] = {
        "": "the trained LSA beats the nuisance-free optimum by the exact gap of the pool's "
            "optimum (L*_nf / L* - 1)"}

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        loss, star, local, free = pool_numbers(site)
        value, theory = free / loss - 1.0, free / local - 1.0
        holds = bool(np.isfinite(value)) and abs(value - theory) <= spec.tolerance
        where = "" if local == star else f" (the global optimum's: {free / star - 1.0:.4g})"
        return self.claim(
            spec, site, holds,
            f"mean {seeds_phrase(site)} of L*_nf / loss - 1 vs L*_nf / local - 1, local the "
            f"minimum of the exact pool loss the trained weights lie in{where}; holds when "
            f"|value - theory| <= tolerance", value, theory, f"{spec.tolerance:g}")


POOL_KINDS: tuple[type[ClaimKind], ...] = (PoolOptimumClaim, PoolNuisanceClaim)
"""The Task diversity section's claim kinds, registered with the built-ins."""
