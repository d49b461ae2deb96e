"""The ``dynamics`` claim kind: one claim per site, holding when it holds for every seed's
run (the value: the worst seed's), from the dynamics measurement
(``iclab.studies.dynamics.run.run_dynamics`` on the run's config: SGD replicates from the
run's start and the exact gradient flow; dynamics.json in the run folder).

Options (``claim``):
- ``sgd-matches-flow``: max over the logged times after the first of |sgd_loss - flow_loss| /
  sgd_loss_stderr; holds when <= tolerance (a number of standard errors).
- ``plateaus``: the flow's plateaus are named k = 0, 1, ..., d in this order, each at the
  best rank-k loss within the relative tolerance; the value is the largest relative gap.
- ``merged-drop``: the flow drops once (plateaus k = 0 and k = d only) and makes half its
  drop at the analytic time within the relative tolerance; value t_flow / t_analytic - 1.
- ``global-optimum``: the flow's end loss against L* of ``iclab theory`` (Gamma* in closed
  form, ``iclab.theory.gaussian``) within the relative tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from iclab.config.train import TrainConfig
from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind
from iclab.experiments.claims.needs import (
    GAUSSIAN,
    MERGED,
    MULTI_HEAD,
    PLAIN_SGD,
    WHITE,
    first_unmet,
)
from iclab.experiments.claims.parameters import ClaimParameter, integer
from iclab.experiments.claims.targets import run_gaussian_optimum
from iclab.experiments.specs.claim_spec import ClaimSpec, RunMeasurement
from iclab.experiments.specs.results import RunRecord, Site, run_dir
from iclab.runs.folder import read_finished_run
from iclab.studies.dynamics.outputs import JSON_NAME, PNG_NAME
from iclab.studies.dynamics.run import MAX_REPLICATES, run_dynamics
from iclab.tasks.base import TaskFamily
from iclab.utils.errors import ConfigError
from iclab.utils.io import read_json


@dataclass(frozen=True)
class DynamicsMeasurement:
    """The exact flow of one run and, unless ``replicates`` is 0, that many SGD replicates
    from its start (``RunMeasurement``), in RUN/dynamics-flow or RUN/dynamics-R<replicates>."""

    replicates: int

    def folder(self, run_folder: Path) -> Path:
        return run_folder / (f"dynamics-R{self.replicates}" if self.replicates
                             else "dynamics-flow")

    def is_done(self, run_folder: Path) -> bool:
        folder = self.folder(run_folder)
        return (folder / JSON_NAME).is_file() and (folder / PNG_NAME).is_file()

    def measure(self, run_folder: Path) -> None:
        config, _ = read_finished_run(run_folder)
        run_dynamics(config, self.folder(run_folder), flow_only=not self.replicates,
                     replicates=max(self.replicates, 2), progress=False)


def measured(spec: ClaimSpec, record: RunRecord, context: ClaimContext) -> dict[str, Any]:
    """dynamics.json of ``record``'s run (read once per context)."""
    if context.out_dir is None:
        raise ConfigError(f"the dynamics claim on group {spec.group!r} needs the sweep folder")
    measurement = DynamicsMeasurement(spec.parameters["replicates"])
    run_folder = run_dir(context.out_dir, record.point.run_id)
    key = ("dynamics", str(measurement.folder(run_folder)))
    if key not in context.cache:
        if not measurement.is_done(run_folder):
            raise ConfigError(f"the dynamics claim on group {spec.group!r}: "
                              f"{measurement.folder(run_folder)} holds no dynamics.json; run "
                              f"the sweep again to measure it")
        context.cache[key] = read_json(measurement.folder(run_folder) / JSON_NAME)
    data: dict[str, Any] = context.cache[key]
    return data


CLAIMS = ("sgd-matches-flow", "plateaus", "merged-drop", "global-optimum")


class DynamicsClaim(ClaimKind):
    name = "dynamics"
    options: ClassVar[dict[str, tuple[str, ...]]] = {"claim": CLAIMS}
    parameters: ClassVar[dict[str, ClaimParameter]] = {
        "replicates": ClaimParameter("independent SGD runs from the run's start (0: the "
                                     "flow only)", integer(0, MAX_REPLICATES), default=0),
    }
    statements: ClassVar[dict[str, str]] = {
        "sgd-matches-flow": "the SGD loss curve equals the exact gradient flow of the "
                            "population loss at t = lr x step, within the tolerance in "
                            "standard errors, at every logged time after the first",
        "plateaus": "from a small start, separate keys and queries pass through plateaus at "
                    "the best rank-k losses, k = 0, 1, ..., d one at a time",
        "merged-drop": "from a small start, merged heads drop once, at the analytic time",
        "global-optimum": "gradient flow ends at the global optimum L* of the exact theory",
    }

    def measurements(self, parameters: dict[str, Any]) -> tuple[RunMeasurement, ...]:
        return (DynamicsMeasurement(parameters["replicates"]),)

    def validate_parameters(self, raw: dict[str, Any], where: str) -> dict[str, Any]:
        parameters = super().validate_parameters(raw, where)
        if raw.get("claim", CLAIMS[0]) == "sgd-matches-flow" and parameters["replicates"] < 2:
            raise ConfigError(f"{where}: sgd-matches-flow compares SGD's mean with the flow: "
                              f"replicates must be from 2 to {MAX_REPLICATES}, got "
                              f"{parameters['replicates']}")
        return parameters

    def unmet(self, spec: ClaimSpec, config: TrainConfig, task: TaskFamily) -> str | None:
        """What ``iclab dynamics`` runs on (a linear Gaussian family, the multi-head lsa,
        plain SGD); merged-drop: merged heads where the analytic drop time applies."""
        needs = [GAUSSIAN, MULTI_HEAD, PLAIN_SGD]
        if self.option(spec) == "merged-drop":
            needs += [MERGED, WHITE]
        return first_unmet(needs, config, task)

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        verdicts = [self._verdict(spec, record, context) for record in site.records]
        holds = all(verdict[0] for verdict in verdicts)
        worst = max(verdicts, key=lambda verdict: (not verdict[0], abs(verdict[1])))
        tol = spec.tolerance
        label = {"sgd-matches-flow": f"{tol:g} standard errors",
                 "plateaus": f"k = 0..d in order, each within {100 * tol:g}%",
                 "merged-drop": f"one drop, within {100 * tol:g}% of the analytic time",
                 "global-optimum": f"converged, within {tol:g} of L*"}[self.option(spec)]
        seeds = f"worst of {len(verdicts)} seed{'s' * (len(verdicts) > 1)}: "
        return self.claim(spec, site, holds, seeds + worst[2], worst[1], 0.0, label)

    def _verdict(self, spec: ClaimSpec, record: RunRecord,
                 context: ClaimContext) -> tuple[bool, float, str]:
        """(holds, value, what the value is) for one run."""
        data = measured(spec, record, context)
        option, tol = self.option(spec), spec.tolerance
        if option == "sgd-matches-flow":
            if data["sgd_loss"] is None:
                raise ConfigError(f"group {spec.group!r}: sgd-matches-flow needs replicates "
                                  f">= 2")
            z = [abs(s - f) / e for s, f, e in zip(data["sgd_loss"][1:], data["flow_loss"][1:],
                                                    data["sgd_loss_stderr"][1:], strict=True)]
            return (max(z) <= tol, float(max(z)),
                    f"max over {len(z)} logged times of |SGD - flow| / stderr "
                    f"({data['replicates']} replicates, {data['eval_prompts']} prompts each)")
        levels = data["rank_k_losses"]
        found = [(p["components"], p["loss"]) for p in data["plateaus"]]
        ks = [k for k, _ in found]
        d = len(levels) - 1
        if option == "plateaus":
            gaps = [abs(loss / levels[k] - 1) if k is not None else np.inf
                    for k, loss in found]
            value = float(max(gaps, default=np.inf))
            return (ks == list(range(d + 1)) and value <= tol, value,
                    f"plateaus named k = {ks} (theory: 0..{d} in order); value: largest "
                    f"|loss / L_k - 1|")
        if option == "merged-drop":
            analytic = data["drop_time_analytic"]
            if analytic is None:
                raise ConfigError(f"group {spec.group!r}: merged-drop needs merged heads on "
                                  f"white covariates (the analytic time applies there only)")
            value = data["drop_time_flow"] / analytic - 1
            return (ks == [0, d] and abs(value) <= tol, value,
                    f"plateaus k = {ks} (one drop: [0, {d}]); value: t_flow / t_analytic - 1, "
                    f"t_analytic = {analytic:.6g}")
        star = run_gaussian_optimum(record).loss
        value = data["flow_final_loss"] / star - 1
        return (bool(data["flow_converged"]) and abs(value) <= tol, value,
                f"flow's loss at t = {data['flow_final_time']:.4g} / L* - 1 "
                f"(L* = {star:.10g})")
