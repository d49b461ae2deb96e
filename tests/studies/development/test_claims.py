"""The ``development`` claim kind: verdicts from development.json files (fabricated, and
measured on a predictor that is exactly dMMSE), and a dMMSE patched by 10 % failing it."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from iclab.config.train import TrainConfig
from iclab.experiments.claims.registry import ClaimRegistry, evaluate_claims
from iclab.experiments.registries import Registries
from iclab.experiments.specs.results import RunRecord, run_dir
from iclab.experiments.specs.spec import Spec, parse_spec
from iclab.studies.development import measure
from iclab.studies.development.claims import DevelopmentMeasurement
from iclab.studies.pool.dmmse import PoolPosteriorMean

REGISTRIES = Registries()


def make_spec(option: str, tolerance: float) -> Spec:
    claim = {"section": "Development", "kind": "development", "claim": option, "group": "g",
             "tolerance": tolerance, "prompts": 500}
    return parse_spec({"defaults": {"d": 2, "steps": 10},
                       "groups": [{"name": "g", "seeds": [0, 1], "n": 8, "sigma": 0.25,
                                   "tasks": 2, "model": "transformer"}],
                       "claims": [claim]}, "t", REGISTRIES)


def fabricate(spec: Spec, out: Path, rows: dict[int, dict[str, Any]]) -> dict[str, RunRecord]:
    records = {}
    for point in spec.points():
        records[point.run_id] = RunRecord(point, {"wall_seconds": 1.0})
        folder = run_dir(out, point.run_id)
        folder.mkdir(parents=True, exist_ok=True)
        final = {"step": 10, **rows[point.config.run.seed]}
        (folder / "development.json").write_text(json.dumps({"prompts": 500,
                                                             "checkpoints": [final]}))
    return records


@pytest.mark.parametrize(("option", "gaps", "holds"), [
    ("closer-to-dmmse", (0.010, 0.010), True),        # 0.01 / (0.002 sqrt 2 / 2) = 7.07
    ("closer-to-dmmse", (0.010, -0.006), False),      # mean 0.002: 1.41 errors
    ("closer-to-ridge", (-0.010, -0.010), True),
    ("closer-to-ridge", (0.010, 0.010), False),
])
def test_verdicts_from_the_mean_over_seeds(tmp_path: Path, option: str,
                                           gaps: tuple[float, float], holds: bool) -> None:
    spec = make_spec(option, 3)
    rows = {seed: {"ridge_minus_dmmse": gap, "ridge_minus_dmmse_stderr": 0.002}
            for seed, gap in enumerate(gaps)}
    records = fabricate(spec, tmp_path, rows)
    (claim,) = evaluate_claims(spec, records, ClaimRegistry(), out_dir=tmp_path)
    assert claim.holds is holds
    expected = (gaps[0] + gaps[1]) / 2 / (math.sqrt(2) * 0.002 / 2)
    assert claim.value == pytest.approx(expected)
    assert DevelopmentMeasurement(500).is_done(run_dir(tmp_path, next(iter(records))))
    assert not DevelopmentMeasurement(400).is_done(run_dir(tmp_path, next(iter(records))))


def final_gap(refs: dict[str, measure.Reference], model: Any) -> float:
    row = measure.measure(model, refs)
    return float(row["ridge_minus_dmmse"] / row["ridge_minus_dmmse_stderr"])


def test_exact_dmmse_holds_and_a_dmmse_patched_by_ten_percent_fails(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A 'model' that is exactly the pool's dMMSE is closer to dMMSE than to ridge by many
    errors; if the theory's dMMSE used the pool's tasks 10 % too long it would not be."""
    config = TrainConfig.from_json({"d": 2, "n": 8, "sigma": 0.25, "tasks": 2},
                                   REGISTRIES.models, families=REGISTRIES.families)
    task = config.make_task(REGISTRIES.families)
    assert task.task_pool is not None
    truth = PoolPosteriorMean(task.task_pool, task.sigma)
    assert final_gap(measure.references(task, 2000, 0, 2), truth) >= 3
    exact = measure.exact_predictors

    def patched(task: Any, layers: int) -> dict[str, Any]:
        out = exact(task, layers)
        out["dmmse"] = PoolPosteriorMean(task.task_pool * 1.1, task.sigma)
        return out

    monkeypatch.setattr(measure, "exact_predictors", patched)
    assert final_gap(measure.references(task, 2000, 0, 2), truth) < 3
