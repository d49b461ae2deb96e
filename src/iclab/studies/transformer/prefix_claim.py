"""The ``prefix`` claim kind: Garg et al.'s comparisons of a model's prefix curve (the error /
d after k in-context examples, prefix.json) with its baselines and with this project's theory.

The option ``compare`` chooses the claim; every value is the mean over the site's seeds of the
per-seed number, read from prefix.json in each run's folder (the sweep folder is needed):

- ``near-ols``: the largest gap model - least squares over k = 2d..n; holds when <= tolerance
  (absolute, in units of error / d);
- ``below-averaging``: the largest ratio model / averaging over k = 2d..n; holds when
  <= tolerance;
- ``falls``: the ratio of the error at k = 2d to the error at k = 0; holds when <= tolerance
  (one rule: the curve's shape in between is drawn, not claimed; a model that learns nothing
  from its context has ratio 1, Bayes at sigma = 0 has 0);
- ``below-lsa``: the error at k = n against the optimal one-layer LSA's loss at n, L*(n) / d
  (Theorem 1, ``iclab.theory.gaussian``); holds when value <= theory x (1 + tolerance);
- ``below-gd-steps``: the error at k = n against the optimal L-step GD's loss at n / d, L the
  model's ``layers`` (``iclab.theory.depth``); holds when value <= theory x (1 + tolerance).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from iclab.config.train import TrainConfig
from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind, seeds_phrase
from iclab.experiments.claims.needs import (
    GAUSSIAN,
    ISOTROPIC,
    N_AT_LEAST_2D,
    PREFIX_MODEL,
    first_unmet,
)
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.results import Site, run_dir
from iclab.tasks.base import TaskFamily
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.depth.multistep import multistep_optimum
from iclab.theory.gaussian import loss_star_isotropic
from iclab.training.run_folder import PREFIX_JSON
from iclab.utils.errors import ConfigError
from iclab.utils.io import read_json

COMPARISONS = ("near-ols", "below-averaging", "falls", "below-lsa", "below-gd-steps")


def _curves(site: Site, context: ClaimContext) -> list[dict[str, Any]]:
    """prefix.json of every run of the site (ConfigError naming a missing one)."""
    _, _, out_dir = context.sweep("claim kind prefix (it reads prefix.json)")
    found = []
    for record in site.records:
        path = run_dir(out_dir, record.point.run_id) / PREFIX_JSON
        if not path.exists():
            raise ConfigError(f"{path}: missing; claim kind prefix needs a model with prefix "
                              f"predictions (--model transformer)")
        found.append(read_json(path))
    return found


def _column(curves: dict[str, Any], name: str) -> np.ndarray:
    return np.asarray([np.nan if row.get(name) is None else row[name]
                       for row in curves["rows"]], dtype=np.float64)


def _falls(curves: dict[str, Any]) -> float:
    """error(k = 2d) / error(k = 0) of one run's curve."""
    model = _column(curves, "model")
    return float(model[2 * curves["d"]] / model[0])


class PrefixClaim(ClaimKind):
    name = "prefix"
    options: ClassVar[dict[str, tuple[str, ...]]] = {"compare": COMPARISONS}
    statements: ClassVar[dict[str, str]] = {
        "near-ols": "for k >= 2d the model's error is close to least squares'",
        "below-averaging": "for k >= 2d the model's error is far below averaging's",
        "falls": "the model's error curve falls with the number of examples k",
        "below-lsa": "at k = n the model's error is below the optimal one-layer LSA's loss",
        "below-gd-steps": "at k = n the model's error is below the loss of the optimal L-step "
                          "GD, L its number of layers",
    }

    def unmet(self, spec: ClaimSpec, config: TrainConfig, task: TaskFamily) -> str | None:
        """Prefix predictions and n >= 2d; below-lsa and below-gd-steps compare with the
        isotropic linear Gaussian theory."""
        needs = [PREFIX_MODEL, N_AT_LEAST_2D]
        if self.option(spec) in ("below-lsa", "below-gd-steps"):
            needs += [GAUSSIAN, ISOTROPIC]
        return first_unmet(needs, config, task)

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        compare = self.option(spec)
        all_curves = _curves(site, context)
        first = all_curves[0]
        d, n, sigma = first["d"], first["n"], float(first["sigma"])
        tol = spec.tolerance
        if n < 2 * d:
            raise ConfigError(f"claim kind prefix needs n >= 2d; site {site.label!r} has "
                              f"d = {d}, n = {n}")
        late = slice(2 * d, n + 1)
        if compare == "near-ols":
            value = float(np.mean([np.max(_column(c, "model")[late] - _column(c, "ols")[late])
                                   for c in all_curves]))
            return self.claim(spec, site, value <= tol, f"largest (model - least squares) "
                              f"error / d over k = 2d..n, mean {seeds_phrase(site)}; holds "
                              f"when <= tolerance", value, 0.0, f"{tol:g}")
        if compare == "below-averaging":
            value = float(np.mean([np.max(_column(c, "model")[late] /
                                          _column(c, "averaging")[late]) for c in all_curves]))
            return self.claim(spec, site, value <= tol, f"largest model / averaging error "
                              f"ratio over k = 2d..n, mean {seeds_phrase(site)}; holds when "
                              f"<= tolerance", value, 0.0, f"{tol:g}")
        if compare == "falls":
            value = float(np.mean([_falls(c) for c in all_curves]))
            return self.claim(spec, site, value <= tol, f"error(k = 2d) / error(k = 0), mean "
                              f"{seeds_phrase(site)}; holds when <= tolerance", value, 0.0,
                              f"{tol:g}")
        value = float(np.mean([_column(c, "model")[n] for c in all_curves]))
        if compare == "below-lsa":
            theory = loss_star_isotropic(n, d, sigma) / d
            what = "the optimal one-layer LSA's loss L*(n) / d (Theorem 1)"
        else:
            layers = int(site.config.get("layers", 1))
            theory = multistep_optimum(LinearGaussian(d, n, sigma), layers).loss / d
            what = f"the optimal {layers}-step GD's loss / d (docs/theory.md section 10)"
        return self.claim(spec, site, value <= theory * (1 + tol), f"error / d at k = n, "
                          f"mean {seeds_phrase(site)}, against {what}; holds when value <= "
                          f"theory x (1 + tolerance)", value, theory, f"{tol:g}")


PREFIX_KINDS: tuple[type[ClaimKind], ...] = (PrefixClaim,)
"""The Transformers section's claim kinds, registered with the built-ins."""
