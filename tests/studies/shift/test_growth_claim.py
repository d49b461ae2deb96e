"""The ``shift-growth`` claim kind and the report's measurements: verdicts from shift.json files
against the optimal LSA's exact growth, ``source`` in claims.json, measurements kept out of it."""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from iclab.experiments.claims.registry import ClaimRegistry, evaluate_claims
from iclab.experiments.registries import Registries
from iclab.experiments.report.write import write_report
from iclab.experiments.specs.results import RunRecord, run_dir
from iclab.experiments.specs.spec import Spec, parse_spec
from iclab.studies.shift.claims.shift_folder import shift_folder
from iclab.studies.shift.growth import exact_growth
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.utils.errors import ConfigError

VALUES = [0.5, 1.0, 2.0]
SOURCE = "docs/theory.md section 13.2"


def make_spec(tolerance: float = 4, measurements: list[dict[str, Any]] | None = None) -> Spec:
    claim = {"section": "Shift", "kind": "shift-growth", "group": "g", "shift": "w-scale",
             "values": VALUES, "tolerance": tolerance, "source": SOURCE}
    return parse_spec({"defaults": {"d": 2, "steps": 10},
                       "groups": [{"name": "g", "seeds": [0, 1], "n": 4, "sigma": 0.5}],
                       "claims": [claim], "measurements": measurements or []}, "t",
                      Registries())


def rows_with_growth(growth: dict[float, float], stderr: float) -> list[dict[str, Any]]:
    """Rows whose loss / Bayes loss grows by ``growth`` (the Bayes loss 0.5 at every value),
    each loss with relative standard error ``stderr``."""
    return [{"value": v, "model_loss": 2.0 * growth[v], "model_loss_stderr": stderr * 2.0
             * growth[v], "bayes_loss": 0.5, "bayes_loss_stderr": 0.0, "exact_loss": None,
             "gd_exact_loss": 1.0} for v in VALUES]


def fabricate(spec: Spec, out: Path, growth: dict[int, dict[float, float]]
              ) -> dict[str, RunRecord]:
    records = {}
    for point in spec.points():
        records[point.run_id] = RunRecord(point, {"wall_seconds": 1.0})
        folder = shift_folder(run_dir(out, point.run_id), spec.claims[0].parameters)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "shift.json").write_text(json.dumps({
            "kind": "w-scale", "rows": rows_with_growth(growth[point.config.run.seed], 0.01),
            "prompts": 20000, "seed": 0, "model": "lsa"}))
        (folder / "shift.png").write_bytes(b"not really a png")
    return records


@cache
def theory() -> dict[float, float]:
    # the claim draws it to a tenth of the measured growth's relative standard error (1.41 %)
    exact = exact_growth(LinearGaussian(2, 4, 0.5), "w-scale", VALUES, 1.0, 0.1 * 0.01 * 2**0.5)
    return {v: g for v, (g, _) in exact.items()}


@pytest.mark.parametrize(("offset_in_se", "holds"), [(0.0, True), (3.5, True), (4.6, False),
                                                     (-4.6, False)])
def test_the_measured_growth_is_judged_against_the_optimal_lsas(
        tmp_path: Path, offset_in_se: float, holds: bool) -> None:
    spec = make_spec()
    exact = dict(theory())
    # growth se = growth x hypot(0.01, 0.01) (two losses of 1 % each); shift seed 1 at c = 2
    shifted = {**exact, 2.0: exact[2.0] * (1 + offset_in_se * 0.01 * 2**0.5)}
    records = fabricate(spec, tmp_path, {0: exact, 1: shifted})
    (verdict,) = evaluate_claims(spec, records, ClaimRegistry(), out_dir=tmp_path)
    assert verdict.holds is holds
    assert verdict.theory == pytest.approx(exact[2.0], rel=1e-9)   # the extreme value: c = 2
    assert verdict.value == pytest.approx((exact[2.0] + shifted[2.0]) / 2, rel=1e-9)
    assert verdict.source == SOURCE and verdict.tolerance_text == "4 se"


def test_claims_json_has_sources_and_the_report_shows_measurements_apart(tmp_path: Path) -> None:
    measurement = {"section": "Shift", "groups": ["g"], "shift": "w-scale", "values": VALUES}
    spec = make_spec(measurements=[measurement])
    records = fabricate(spec, tmp_path, {0: dict(theory()), 1: dict(theory())})
    claims = write_report(spec, records, tmp_path, ClaimRegistry())
    saved = json.loads((tmp_path / "claims.json").read_text())
    assert len(saved) == len(claims) == 1 and saved[0]["source"] == SOURCE
    assert saved[0]["holds"] is True
    markdown = (tmp_path / "report.md").read_text()
    assert "### Measurements (not claims): w-scale shift, g" in markdown and SOURCE in markdown
    assert (tmp_path / "measurement_1_w-scale.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "g_growth_over_n.png").read_bytes()[:4] == b"\x89PNG"
    html = (tmp_path / "report.html").read_text()
    assert "Measurements (not claims)" in html


@pytest.mark.parametrize(("changes", "message"), [
    ({"shift": "sigma"}, "shift must be one of n, x-scale"),
    ({"values": [0.5, 2.0]}, "must include the training value 1"),
    ({"source": 3}, "source must be strings"),
])
def test_bad_claims_are_one_line_errors(changes: dict[str, Any], message: str) -> None:
    raw = {"section": "Shift", "kind": "shift-growth", "group": "g", "shift": "w-scale",
           "values": VALUES, "tolerance": 4, **changes}
    with pytest.raises(ConfigError, match=message) as info:
        parse_spec({"groups": [{"name": "g", "d": 2, "n": 4}], "claims": [raw]}, "t",
                   Registries())
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("changes", "message"), [
    ({"groups": ["h"]}, "groups must list groups of the spec"),
    ({"shift": "sigma"}, "shift must be one of"),
    ({"values": [0.5, 2.0]}, "must include the training value 1"),
    ({"prompts": 10}, "must be an integer from 100"),
    ({"colour": 1}, "unknown keys"),
])
def test_bad_measurements_are_one_line_errors(changes: dict[str, Any], message: str) -> None:
    raw = {"section": "Shift", "groups": ["g"], "shift": "w-scale", "values": VALUES, **changes}
    with pytest.raises(ConfigError, match=message) as info:
        parse_spec({"groups": [{"name": "g", "d": 2, "n": 4}], "measurements": [raw]}, "t",
                   Registries())
    assert str(info.value).startswith("t: measurement 1") and "\n" not in str(info.value)


def test_each_test_laws_bayes_risk_is_computed_once_per_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A w-scale and a w-mean claim, a w-scale measurement and the growth-over-n figure: every
    w-mean value, and w-scale at 1, have the training law's Bayes risk; each distinct law's
    Monte Carlo risk is computed once, and the claims' theory is exactly the uncached one."""
    import iclab.studies.shift.optimum as shifted_optimum

    means = [-1.0, 0.0, 1.0]
    scale_claim = {"section": "Shift", "kind": "shift-growth", "group": "g",
                   "shift": "w-scale", "values": VALUES, "tolerance": 4, "source": SOURCE}
    spec = parse_spec({"defaults": {"d": 2, "steps": 10},
                       "groups": [{"name": "g", "seeds": [0, 1], "n": 4, "sigma": 0.5}],
                       "claims": [scale_claim, {**scale_claim, "shift": "w-mean",
                                                "values": means}],
                       "measurements": [{"section": "Shift", "groups": ["g"],
                                         "shift": "w-scale", "values": VALUES}]}, "t",
                      Registries())
    task = LinearGaussian(2, 4, 0.5)
    relative = 0.1 * 0.01 * 2**0.5  # a tenth of the rows' growth's relative standard error
    uncached = {"w-scale": exact_growth(task, "w-scale", VALUES, 1.0, relative),
                "w-mean": exact_growth(task, "w-mean", means, 0.0, relative)}
    records = {}
    for point in spec.points():
        records[point.run_id] = RunRecord(point, {"wall_seconds": 1.0})
        for claim in spec.claims:
            kind = claim.parameters["shift"]
            growth = {v: g for v, (g, _) in uncached[kind].items()}
            rows = [{**row, "value": v} for row, v in zip(rows_with_growth(
                dict(zip(VALUES, growth.values(), strict=True)), 0.01),
                claim.parameters["values"], strict=True)]
            folder = shift_folder(run_dir(tmp_path, point.run_id), claim.parameters)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "shift.json").write_text(json.dumps({
                "kind": kind, "rows": rows, "prompts": 20000, "seed": 0, "model": "lsa"}))
            (folder / "shift.png").write_bytes(b"not really a png")
    calls: list[tuple[Any, ...]] = []
    real = shifted_optimum.bayes_risk_to_stderr

    def counting(n: int, sigma: float, sigma_x: Any, sigma_w: Any, relative: float, seed: int,
                 sigma_q: Any = None) -> Any:
        calls.append((n, sigma, sigma_x.tobytes(), sigma_w.tobytes(), sigma_q.tobytes(),
                      relative, seed))
        return real(n, sigma, sigma_x, sigma_w, relative, seed, sigma_q=sigma_q)

    monkeypatch.setattr(shifted_optimum, "bayes_risk_to_stderr", counting)
    scale, mean = write_report(spec, records, tmp_path, ClaimRegistry())
    assert len(calls) == len(set(calls))  # no law twice
    # w-scale 0.5, 1, 2 at n = 4 (w-mean adds none: its laws' Bayes risk is the training law's),
    # and the growth over n: w-scale 1 and 2 at each of its 8 n
    assert len(calls) == 3 + 2 * 8
    assert scale.theory == uncached["w-scale"][2.0][0]
    assert mean.theory == max((g for g, _ in uncached["w-mean"].values()),
                              key=lambda g: abs(math.log(g)))
