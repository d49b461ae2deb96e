"""The ``development`` claim kind: where a model trained on a task pool ends between the
pool's Bayes predictor (dMMSE) and ridge (Raventos, Paul, Chen and Ganguli, NeurIPS 2023,
arXiv 2306.15063: below a task-diversity threshold the trained transformer behaves like
dMMSE, above it like ridge; Carroll, Hoogland, Farrugia-Roberts and Murfet 2025, arXiv
2501.17745, the same at small scale).

The measurement (``DevelopmentMeasurement``) is ``iclab development`` on each run of the
claim's group, at its final checkpoint only: development.json and .csv in the run folder (the
claims read the final checkpoint; every checkpoint and the figure would take the driver
several times as long: ``iclab development RUN_DIR`` measures and draws them). The value, per
site, is the final checkpoint's paired difference dist_ridge - dist_dmmse on the pool prompts
divided by its standard error (the mean over seeds of the differences, its error the seeds'
errors combined).
Options (``claim``):

- ``closer-to-dmmse``: holds when value >= tolerance (closer to dMMSE by at least
  ``tolerance`` standard errors);
- ``closer-to-ridge``: holds when -value >= tolerance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind, seeds_phrase
from iclab.experiments.claims.needs import POOL
from iclab.experiments.claims.parameters import ClaimParameter, integer
from iclab.experiments.specs.claim_spec import ClaimSpec, RunMeasurement
from iclab.experiments.specs.results import Site, run_dir, stderr_of_mean
from iclab.studies.development.outputs import JSON_NAME
from iclab.utils.errors import ConfigError
from iclab.utils.io import read_json

CLAIMS = ("closer-to-dmmse", "closer-to-ridge")
MAX_PROMPTS = 1_000_000


@dataclass(frozen=True)
class DevelopmentMeasurement:
    """``iclab development`` on one run, ``prompts`` prompts a set (``RunMeasurement``)."""

    prompts: int

    def is_done(self, run_folder: Path) -> bool:
        path = run_folder / JSON_NAME
        return path.is_file() and read_json(path).get("prompts") == self.prompts

    def measure(self, run_folder: Path) -> None:
        from iclab.experiments.registries import Registries
        from iclab.studies.development.run import run_development

        run_development(run_folder, Registries(), self.prompts, None, progress=False,
                        figure=False, final_only=True)


def final_gap(spec: ClaimSpec, site: Site, context: ClaimContext) -> tuple[float, float]:
    """(mean over seeds of the final ridge_minus_dmmse, its standard error)."""
    if context.out_dir is None:
        raise ConfigError(f"the development claim on group {spec.group!r} needs the sweep "
                          f"folder")
    gaps, errors = [], []
    for record in site.records:
        path = run_dir(context.out_dir, record.point.run_id) / JSON_NAME
        if not path.is_file():
            raise ConfigError(f"the development claim on group {spec.group!r}: {path} is "
                              f"missing; run the sweep again to measure it")
        final = read_json(path)["checkpoints"][-1]
        gaps.append(float(final["ridge_minus_dmmse"]))
        errors.append(float(final["ridge_minus_dmmse_stderr"]))
    return sum(gaps) / len(gaps), stderr_of_mean(errors)


class DevelopmentClaim(ClaimKind):
    name = "development"
    requires = (POOL,)
    options: ClassVar[dict[str, tuple[str, ...]]] = {"claim": CLAIMS}
    parameters: ClassVar[dict[str, ClaimParameter]] = {
        "prompts": ClaimParameter("prompts in each of iclab development's fixed sets",
                                  integer(2, MAX_PROMPTS), default=2000),
    }
    statements: ClassVar[dict[str, str]] = {
        "closer-to-dmmse": "below the task-diversity threshold the trained model's final "
                           "predictions are closer to the pool's Bayes predictor (dMMSE) than "
                           "to ridge",
        "closer-to-ridge": "above the task-diversity threshold the trained model's final "
                           "predictions are closer to ridge than to dMMSE",
    }

    def measurements(self, parameters: dict[str, Any]) -> tuple[RunMeasurement, ...]:
        return (DevelopmentMeasurement(parameters["prompts"]),)

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        gap, error = final_gap(spec, site, context)
        value = gap / error if error > 0 else math.copysign(math.inf, gap)
        toward_dmmse = self.option(spec) == "closer-to-dmmse"
        holds = (value if toward_dmmse else -value) >= spec.tolerance
        return self.claim(
            spec, site, holds,
            f"mean {seeds_phrase(site)} of dist_ridge - dist_dmmse at the final checkpoint "
            f"({gap:.4g}) in standard errors of the paired difference; holds when "
            f"{'value' if toward_dmmse else '-value'} >= tolerance", value, 0.0,
            f"{spec.tolerance:g} standard errors")
