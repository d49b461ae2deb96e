"""The ``probe`` claim kind: what a ridge probe reads out of a trained model's hook points
(``iclab probe``), judged against a stated threshold.

Each run of the claim's group is probed by the sweep (``ProbeMeasurement``) at the query
position from every hook point of kind ``hook`` (``attn``, ``resid``, ...) to one ``target``
on ``prompts`` prompts drawn with ``seed``, beside the random-initialisation control; the
result goes to ``runs/<run_id>/probes-<hash>/probe.json`` and probe.csv (reused when
there; no figure, to keep the driver's time small). The verdict
reads probe.json only. "Last" is the hook kind's deepest layer; R^2 and its standard error
are averaged over the site's seeds (standard errors combined as independent). Compares
(``tolerance``: standard errors):

- ``at-least``: the trained model's R^2 at the last layer >= threshold - tolerance x se;
- ``init-below``: the random initialisation's R^2 there <= threshold + tolerance x se;
- ``above-init``: trained minus init R^2 there >= threshold - tolerance x se (se of the
  difference);
- ``deepest-highest``: the trained R^2 at the last layer >= the largest R^2 of the earlier
  layers - tolerance x se (the probe is best at the end of the stack).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from iclab.config.train import TrainConfig
from iclab.experiments.claims.kind import Claim, ClaimContext, ClaimKind, seeds_phrase
from iclab.experiments.claims.parameters import ClaimParameter, choice, integer
from iclab.experiments.specs.claim_spec import ClaimSpec, RunMeasurement
from iclab.experiments.specs.results import RunRecord, Site, run_dir, stderr_of_mean
from iclab.studies.probes.outputs import write_probe_outputs
from iclab.studies.probes.probe_run import MAX_PROMPTS, ProbeSettings, probe_run
from iclab.studies.probes.targets import ALL_TARGETS, MOMENT_TARGETS, linear_family
from iclab.tasks.base import TaskFamily
from iclab.utils.errors import ConfigError
from iclab.utils.io import read_json

COMPARES = ("at-least", "init-below", "above-init", "deepest-highest")


def _threshold(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not -1.0 <= value <= 1.0:
        raise ConfigError(f"must be a number from -1 to 1 (an R^2 or a difference of two), "
                          f"got {value!r}")
    return float(value)


@functools.cache
def _registries() -> Any:
    from iclab.experiments.registries import Registries

    return Registries()


@dataclass(frozen=True)
class ProbeMeasurement:
    """The probes of a claim's ``parameters`` on one run (``RunMeasurement``)."""

    parameters: dict[str, Any]

    def folder(self, run_folder: Path) -> Path:
        keys = {key: self.parameters[key] for key in ("hook", "target", "prompts", "seed")}
        digest = hashlib.sha256(json.dumps(keys, sort_keys=True).encode()).hexdigest()[:10]
        return run_folder / f"probes-{digest}"

    def is_done(self, run_folder: Path) -> bool:
        return (self.folder(run_folder) / "probe.json").is_file()

    def measure(self, run_folder: Path) -> None:
        p = self.parameters
        settings = ProbeSettings(targets=(p["target"],), hooks=(p["hook"],),
                                 positions=("query",), prompts=p["prompts"], seed=p["seed"])
        write_probe_outputs(self.folder(run_folder), probe_run(run_folder, settings,
                                                               _registries()), figure=False)


def _scores(spec: ClaimSpec, record: RunRecord, context: ClaimContext
            ) -> dict[tuple[int, str], tuple[float, float]]:
    """(layer, control) -> (R^2, se) of the claim's probes on ``record``'s run."""
    if context.out_dir is None:
        raise ConfigError(f"the probe claim on group {spec.group!r} needs the sweep folder")
    folder = ProbeMeasurement(spec.parameters).folder(run_dir(context.out_dir,
                                                              record.point.run_id))
    key = ("probe", str(folder))
    if key not in context.cache:
        if not (folder / "probe.json").is_file():
            raise ConfigError(f"the probe claim on group {spec.group!r}: {folder} holds no "
                              f"probe.json; run the sweep again to measure it")
        context.cache[key] = {(row["layer"], row["control"]): (row["r2"], row["r2_stderr"])
                              for row in read_json(folder / "probe.json")["rows"]
                              if row["target"] == spec.parameters["target"]}
    scores: dict[tuple[int, str], tuple[float, float]] = context.cache[key]
    return scores


def _mean(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    """Mean R^2 over seeds and its standard error (independent seeds)."""
    return (sum(p[0] for p in pairs) / len(pairs), stderr_of_mean([p[1] for p in pairs]))


class ProbeClaim(ClaimKind):
    name = "probe"
    options: ClassVar[dict[str, tuple[str, ...]]] = {"compare": COMPARES}
    parameters: ClassVar[dict[str, ClaimParameter]] = {
        "hook": ClaimParameter("the kind of hook point probed (attn, resid, state, ...)",
                               lambda v: v if isinstance(v, str) and v else _bad_hook(v),
                               required=True),
        "target": ClaimParameter(f"the exact target: {', '.join(ALL_TARGETS)}",
                                 choice(*ALL_TARGETS), required=True),
        "threshold": ClaimParameter("the stated R^2 (or R^2 difference)", _threshold,
                                    default=0.0),
        "prompts": ClaimParameter("the probes' prompts", integer(100, MAX_PROMPTS),
                                  default=2000),
        "seed": ClaimParameter("the seed of the probes' prompts and folds",
                               integer(0, 2**62), default=0),
    }
    statements: ClassVar[dict[str, str]] = {
        "at-least": "a linear probe from the hook point reads the target out of the trained "
                    "model with R^2 at least the threshold",
        "init-below": "at the random initialisation the same probe's R^2 is below the "
                      "threshold",
        "above-init": "the trained model's probe R^2 exceeds the random initialisation's by "
                      "at least the threshold",
        "deepest-highest": "the probe's R^2 is highest at the last layer",
    }

    def measurements(self, parameters: dict[str, Any]) -> tuple[RunMeasurement, ...]:
        return (ProbeMeasurement(parameters),)

    def unmet(self, spec: ClaimSpec, config: TrainConfig, task: TaskFamily) -> str | None:
        model = config.model_type
        if model is None or not model.hook_points:
            return "a model that declares hook points (Model.hook_points)"
        if spec.parameters["target"] not in MOMENT_TARGETS and not linear_family(task):
            return f"a linear Gaussian family for target {spec.parameters['target']!r}"
        return None

    def check_site(self, spec: ClaimSpec, site: Site, context: ClaimContext) -> Claim:
        compare, tol = self.option(spec), spec.tolerance
        threshold, hook = spec.parameters["threshold"], spec.parameters["hook"]
        per_seed = [_scores(spec, record, context) for record in site.records]
        last = max(layer for layer, _ in per_seed[0])
        trained = _mean([s[(last, "trained")] for s in per_seed])
        init = _mean([s[(last, "init")] for s in per_seed])
        where = f"{hook}.{last} -> {spec.parameters['target']} at the query, mean " \
                f"{seeds_phrase(site)}"
        if compare == "at-least":
            return self.claim(spec, site, trained[0] >= threshold - tol * trained[1],
                              f"held-out R^2 of {where} (se {trained[1]:.2g}); holds when "
                              f">= threshold - tolerance x se", trained[0], threshold,
                              f"{tol:g} se")
        if compare == "init-below":
            return self.claim(spec, site, init[0] <= threshold + tol * init[1],
                              f"held-out R^2 at the random initialisation, {where} (se "
                              f"{init[1]:.2g}); holds when <= threshold + tolerance x se",
                              init[0], threshold, f"{tol:g} se")
        if compare == "above-init":
            se = math.hypot(trained[1], init[1])
            return self.claim(spec, site, trained[0] - init[0] >= threshold - tol * se,
                              f"trained minus random-init R^2, {where} (se {se:.2g}); holds "
                              f"when >= threshold - tolerance x se", trained[0] - init[0],
                              threshold, f"{tol:g} se")
        earlier = max(_mean([s[(layer, "trained")] for s in per_seed])[0]
                      for layer, control in per_seed[0] if control == "trained"
                      and layer != last)
        return self.claim(spec, site, trained[0] >= earlier - tol * trained[1],
                          f"R^2 of {where} against the best earlier layer's; holds when >= "
                          f"it - tolerance x se", trained[0], earlier, f"{tol:g} se")


def _bad_hook(value: Any) -> str:
    raise ConfigError(f"must be the name of a kind of hook point, got {value!r}")
