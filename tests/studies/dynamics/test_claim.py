"""The ``dynamics`` claim kind: verdicts from fabricated dynamics.json files, every seed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from iclab.experiments.claims.registry import ClaimRegistry, evaluate_claims
from iclab.experiments.registries import Registries
from iclab.experiments.specs.results import RunRecord, run_dir
from iclab.experiments.specs.spec import Spec, parse_spec
from iclab.studies.dynamics.claim import DynamicsMeasurement
from iclab.theory.gaussian import gaussian_optimum
from iclab.utils.errors import ConfigError

STAR = gaussian_optimum(4, 0.0, d=2).loss
LEVELS = [2.0, 1.5, STAR]


def make_spec(option: str, tolerance: float, replicates: int = 0) -> Spec:
    claim = {"section": "Dynamics", "kind": "dynamics", "claim": option, "group": "g",
             "tolerance": tolerance, "replicates": replicates}
    return parse_spec({"defaults": {"d": 2, "steps": 10},
                       "groups": [{"name": "g", "seeds": [0, 1], "n": 4, "sigma": 0.0,
                                   "heads": 2, "optimizer": "sgd"}],
                       "claims": [claim]}, "t", Registries())


def data(seed: int, **changes: Any) -> dict[str, Any]:
    base = {"times": [0.1, 0.2, 0.3], "flow_loss": [2.0, 1.6, 1.2],
            "sgd_loss": [2.5, 1.61, 1.19], "sgd_loss_stderr": [0.01, 0.01, 0.01],
            "replicates": 4, "eval_prompts": 100, "rank_k_losses": LEVELS,
            "plateaus": [{"loss": 2.0, "components": 0, "start": 0.0, "end": 1.0},
                         {"loss": STAR * (1 + 1e-5), "components": 2, "start": 2.0,
                          "end": 3.0}],
            "drop_time_flow": 1.5 * (1 + 0.01 * seed), "drop_time_analytic": 1.5,
            "flow_final_loss": STAR * (1 + 1e-9), "flow_final_time": 10.0,
            "flow_converged": True}
    return {**base, **changes}


def fabricate(spec: Spec, out: Path, per_seed: dict[int, dict[str, Any]]
              ) -> dict[str, RunRecord]:
    records = {}
    for point in spec.points():
        records[point.run_id] = RunRecord(point, {"wall_seconds": 1.0})
        replicates = spec.claims[0].parameters["replicates"]
        folder = DynamicsMeasurement(replicates).folder(run_dir(out, point.run_id))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "dynamics.json").write_text(json.dumps(per_seed[point.config.run.seed]))
        (folder / "dynamics.png").write_bytes(b"not really a png")
    return records


@pytest.mark.parametrize(("option", "tolerance", "replicates", "seed1", "holds", "value"), [
    ("sgd-matches-flow", 4, 8, {}, True, 1.0),
    ("sgd-matches-flow", 4, 8, {"sgd_loss": [2.5, 1.7, 1.2]}, False, 10.0),
    ("merged-drop", 0.02, 0, {}, True, 0.01),
    ("merged-drop", 0.02, 0, {"plateaus": []}, False, 0.01),
    ("global-optimum", 1e-6, 0, {}, True, 1e-9),
    ("global-optimum", 1e-6, 0, {"flow_final_loss": STAR * 1.01}, False, 0.01),
    ("plateaus", 1e-3, 0, {}, False, 1e-5),       # k = 1 is missing
])
def test_verdicts_take_the_worst_seed(tmp_path: Path, option: str, tolerance: float,
                                      replicates: int, seed1: dict[str, Any], holds: bool,
                                      value: float) -> None:
    spec = make_spec(option, tolerance, replicates)
    records = fabricate(spec, tmp_path, {0: data(0), 1: data(1, **seed1)})
    (claim,) = evaluate_claims(spec, records, ClaimRegistry(), out_dir=tmp_path)
    assert claim.holds is holds
    assert claim.value == pytest.approx(value, rel=1e-6)
    assert claim.source == "" and claim.section == "Dynamics"


def test_plateaus_in_order_hold_and_a_missing_measurement_is_one_line(tmp_path: Path) -> None:
    spec = make_spec("plateaus", 1e-3)
    three = [{"loss": level * (1 + 1e-4), "components": k, "start": k, "end": k + 0.5}
             for k, level in enumerate(LEVELS)]
    records = fabricate(spec, tmp_path, {0: data(0, plateaus=three), 1: data(1, plateaus=three)})
    (claim,) = evaluate_claims(spec, records, ClaimRegistry(), out_dir=tmp_path)
    assert claim.holds and claim.value == pytest.approx(1e-4, rel=1e-6)
    with pytest.raises(ConfigError, match=r"holds no dynamics\.json"):
        evaluate_claims(spec, records, ClaimRegistry(), out_dir=tmp_path / "elsewhere")
