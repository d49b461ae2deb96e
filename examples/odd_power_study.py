"""A study written outside iclab: a task family with one option and a claim kind, declared
with one ``Study`` object, exactly as iclab's own studies are (docs/guide/extending.md,
"Write a study").

The family ``odd-power``: x ~ N(0, I), f(x) = (u^T x)^p with u uniform on the unit sphere (one
per prompt) and an odd ``power`` p (its one option, ``--power`` on iclab train, ``power`` in a
spec). It is rotation-invariant and sign-symmetric (u -> -u flips f), so iclab's exact theory
of rotation-invariant families gives its optimal one-step GD.

The claim kind ``below-zero-predictor``: the mean test loss over a site's seeds divided by the
loss of predicting 0, E[y_q^2] = (2p - 1)!! + sigma^2 (u^T x ~ N(0, 1), so E[(u^T x)^(2p)] is
the (2p)-th Gaussian moment), exact. It holds when that ratio is at most 1 - tolerance: the
model learned from the prompt at least that share of the label's second moment. The theory
column is the optimal one-layer LSA's ratio, loss_star / E[y_q^2].

    iclab --study examples/odd_power_study.py:STUDY families
    iclab --study examples/odd_power_study.py:STUDY train --family odd-power --power 3 \\
        --d 3 --n 12 --out runs/odd
    iclab --study examples/odd_power_study.py:STUDY sweep examples/odd_power.toml \\
        --out runs/odd-power
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind, seeds_phrase
from iclab.experiments.specs.claim_spec import ClaimSpec
from iclab.experiments.specs.results import Site
from iclab.tasks.base import TaskFamily
from iclab.tasks.family_entry import FamilyEntry
from iclab.tasks.nonlinear import FunctionTask
from iclab.utils.errors import ConfigError
from iclab.utils.fields import setting
from iclab.utils.studies import Study


@dataclass(frozen=True)
class OddPowerOptions:
    """The family's one option, declared once: its check, flag, spec key and help."""

    power: int = setting(3, "The odd power p of f(x) = (u^T x)^p (odd-power only).",
                         minimum=1, maximum=9)


def odd_power_family(d: int, n: int, sigma: float, options: OddPowerOptions) -> TaskFamily:
    """The family at (d, n, sigma) with its options (an even power is refused in one line)."""
    power = options.power
    if power % 2 == 0:
        raise ConfigError(f"power must be odd (f must be sign-symmetric), got {power}")

    def draw(inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """inputs (B, k, d) -> (B, k): one u per row, uniform on the sphere."""
        u = torch.randn(inputs.shape[0], inputs.shape[2], generator=generator,
                        dtype=inputs.dtype, device=inputs.device)
        u = u / u.norm(dim=-1, keepdim=True)
        return torch.einsum("bkd,bd->bk", inputs, u) ** power

    return FunctionTask(d, n, sigma, draw, "odd-power", True, True)


def zero_predictor_loss(power: int, sigma: float) -> float:
    """E[y_q^2] = E[(u^T x)^(2p)] + sigma^2 = (2p - 1)!! + sigma^2, exact."""
    return float(math.prod(range(1, 2 * power, 2))) + sigma**2


class BelowZeroPredictor(ClaimKind):
    """Mean test loss / E[y_q^2] at most 1 - tolerance (see the module docstring)."""

    name = "below-zero-predictor"
    statements: ClassVar[dict[str, str]] = {
        "": "the trained model's loss is clearly below the zero predictor's E[y_q^2]"}

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        config = site.records[0].point.config
        if config.task.family != "odd-power":
            raise ConfigError(f"claim {self.name}: group {spec.group!r} is not odd-power")
        power = int(getattr(config.task, "power"))  # noqa: B009 (the family's own option)
        zero = zero_predictor_loss(power, float(config.task.sigma))
        value = sum(r.result["test_loss"] for r in site.records) / len(site.records) / zero
        theory = float(site.records[0].result["loss_star"]) / zero
        metric = (f"mean test loss {seeds_phrase(site)} / E[y_q^2] = {zero:g} (p = {power}); "
                  f"holds when value <= 1 - {spec.tolerance:g}")
        return self.claim(spec, site, value <= 1 - spec.tolerance, metric, value, theory,
                          f"<= {1 - spec.tolerance:g}")


def families() -> tuple[Any, ...]:
    return (FamilyEntry("odd-power", odd_power_family,
                        "x ~ N(0, I), f(x) = (u^T x)^p, u uniform on the sphere, p odd",
                        OddPowerOptions),)


STUDY = Study(
    "odd-power",
    "an example study: an odd power of a random projection, and a claim against the zero "
    "predictor",
    families=families,
    claim_kinds=lambda: (BelowZeroPredictor(),),
)
