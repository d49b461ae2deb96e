"""The ``shift`` claim kind: verdicts from shift.json files, its parameters, the Shift section."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclab.cli.main import main
from iclab.experiments.claims.registry import ClaimRegistry, evaluate_claims
from iclab.experiments.registries import Registries
from iclab.experiments.report.write import write_report
from iclab.experiments.specs.builtin import builtin_spec
from iclab.experiments.specs.results import RunRecord, run_dir
from iclab.experiments.specs.spec import Spec, parse_spec
from iclab.experiments.specs.sweep import measure_runs
from iclab.studies.shift.claims.shift_folder import shift_folder
from iclab.studies.shift.laws import SHIFT_KINDS
from iclab.utils.errors import ConfigError

VALUES = [0.5, 1.0, 2.0]


def make_spec(claims: list[dict[str, Any]], seeds: tuple[int, ...] = (0, 1)) -> Spec:
    return parse_spec({"defaults": {"d": 2, "steps": 10},
                       "groups": [{"name": "g", "seeds": list(seeds), "n": 4, "sigma": 0.5}],
                       "claims": claims}, "t", Registries())


def claim(measure: str, tolerance: float, **more: Any) -> dict[str, Any]:
    return {"section": "Shift", "kind": "shift", "group": "g", "shift": "x-scale",
            "values": VALUES, "measure": measure, "tolerance": tolerance, **more}


def row(value: float, model: float, stderr: float, exact: float | None, bayes: float,
        gd_exact: float) -> dict[str, Any]:
    return {"value": value, "model_loss": model, "model_loss_stderr": stderr,
            "exact_loss": exact, "bayes_loss": bayes, "bayes_loss_stderr": 0.01,
            "gd_exact_loss": gd_exact}


def fabricate(spec: Spec, out: Path, rows_of_seed: dict[int, list[dict[str, Any]]]
              ) -> dict[str, RunRecord]:
    """Finished-looking records and, for each run, the shift folder the claim would use."""
    records = {}
    for point in spec.points():
        records[point.run_id] = RunRecord(point, {"wall_seconds": 1.0})
        for claim_spec in spec.claims:
            folder = shift_folder(run_dir(out, point.run_id), claim_spec.parameters)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "shift.json").write_text(json.dumps({
                "kind": claim_spec.parameters["shift"], "rows": rows_of_seed[point.config.run.seed],
                "prompts": claim_spec.parameters["prompts"], "seed": claim_spec.parameters["seed"],
                "model": "lsa"}))
            (folder / "shift.png").write_bytes(b"not really a png")
    return records


def exact_rows(gaps_in_se: list[float]) -> list[dict[str, Any]]:
    """Rows whose measured loss is gap x 0.1 above (or below) an exact loss of 10."""
    return [row(v, 10.0 + 0.1 * gap, 0.1, 10.0, 1.0, 10.0)
            for v, gap in zip(VALUES, gaps_in_se, strict=True)]


@pytest.mark.parametrize(("gaps", "value", "holds"), [
    ([0.5, -3.9, 1.0], 3.9, True),
    ([0.5, 4.1, 1.0], 4.1, False),    # too high
    ([-4.2, 0.0, 1.0], 4.2, False),   # too low
])
def test_exact_agreement_is_the_largest_z_over_seeds_and_values(
        tmp_path: Path, gaps: list[float], value: float, holds: bool) -> None:
    spec = make_spec([claim("exact-agreement", 4)])
    records = fabricate(spec, tmp_path, {0: exact_rows([0.0, 1.0, -2.0]), 1: exact_rows(gaps)})
    # no model file: read only
    (verdict,) = evaluate_claims(spec, records, ClaimRegistry(), out_dir=tmp_path)
    assert verdict.value == pytest.approx(value) and verdict.holds is holds
    assert verdict.theory == 0.0 and verdict.tolerance_text == "4 se"
    assert "x-scale shift (0.5, 1, 2)" in verdict.claim


def ratio_rows(model: list[float], bayes: list[float], gd: list[float]) -> list[dict[str, Any]]:
    return [row(v, m, 0.01, None, b, g)
            for v, m, b, g in zip(VALUES, model, bayes, gd, strict=True)]


def test_ratio_measures_take_the_growth_from_the_training_value(tmp_path: Path) -> None:
    # r = model / bayes; seed 0: r = 1, 2, 12 -> growth 12 / 2 = 6 (largest on the right);
    # seed 1: r = 4, 2, 2 -> growth 4 / 2 = 2 (largest on the left); GD: 4, 2, 10 -> 10 / 2
    rows = {0: ratio_rows([2.0, 4.0, 6.0], [2.0, 2.0, 0.5], [8.0, 4.0, 5.0]),
            1: ratio_rows([8.0, 4.0, 1.0], [2.0, 2.0, 0.5], [8.0, 4.0, 5.0])}
    cases = [("ratio-bounded", 6.0, True, 6.0), ("ratio-bounded", 5.9, False, 6.0),
             ("ratio-grows", 2.0, True, 2.0), ("ratio-grows", 2.1, False, 2.0)]
    for measure, tolerance, holds, value in cases:
        spec = make_spec([claim(measure, tolerance)])
        (verdict,) = evaluate_claims(spec, fabricate(spec, tmp_path, rows), ClaimRegistry(),
                                     out_dir=tmp_path)
        assert (verdict.value, verdict.holds) == (pytest.approx(value), holds), measure
        assert verdict.theory == pytest.approx(5.0)
        sign = "<=" if measure == "ratio-bounded" else ">="
        assert verdict.tolerance_text == f"{sign} {tolerance:g}"


def test_claims_that_cannot_be_judged_are_one_line_errors(tmp_path: Path) -> None:
    spec = make_spec([claim("exact-agreement", 4)], seeds=(0,))
    rows = {0: [row(v, 1.0, 0.1, None, 1.0, 1.0) for v in VALUES]}  # softmax: no exact loss
    records = fabricate(spec, tmp_path, rows)
    with pytest.raises(ConfigError, match="has no linear read-out") as info:
        evaluate_claims(spec, records, ClaimRegistry(), out_dir=tmp_path)
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="needs the sweep folder"):
        evaluate_claims(spec, records, ClaimRegistry())


def test_the_report_embeds_each_runs_shift_figure(tmp_path: Path) -> None:
    spec = make_spec([claim("exact-agreement", 4), claim("ratio-grows", 1.0)], seeds=(0,))
    records = fabricate(spec, tmp_path, {0: exact_rows([0.0, 1.0, 2.0])})
    claims = write_report(spec, records, tmp_path, ClaimRegistry())
    assert [c.holds for c in claims] == [True, True]
    assert (tmp_path / "g_shift_x-scale.png").read_bytes() == b"not really a png"
    html = (tmp_path / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 1 and "4 se" in html and "&gt;= 1" in html
    saved = json.loads((tmp_path / "claims.json").read_text())
    assert [c["tolerance"] for c in saved] == [4.0, 1.0]


@pytest.mark.parametrize(("changes", "message"), [
    ({"shift": None}, "shift is required"),
    ({"shift": "y-scale"}, "shift must be one of n, sigma"),
    ({"measure": "ratio"}, "measure must be one of exact-agreement"),
    ({"values": 2.0}, "values must be a list of 2 to 50 finite numbers"),
    ({"values": [1.0, 1]}, "values must list distinct numbers"),
    ({"values": [0.0, 1.0]}, "values must suit shift x-scale"),
    ({"values": [0.5, 2.0], "measure": "ratio-grows"}, "must include the training value 1"),
    ({"prompts": 50}, "prompts must be an integer from 100"),
    ({"seed": -1}, "seed must be an integer from 0"),
    ({"colour": "red"}, "unknown keys"),
])
def test_bad_parameters_are_refused_naming_the_claim(changes: dict[str, Any],
                                                     message: str) -> None:
    raw = {k: v for k, v in {**claim("exact-agreement", 4), **changes}.items() if v is not None}
    with pytest.raises(ConfigError, match=message) as info:
        make_spec([raw])
    assert str(info.value).startswith("t: claims[0]") and "\n" not in str(info.value)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**8) | st.floats() | st.text(max_size=8)
    | st.sampled_from([*SHIFT_KINDS, "exact-agreement", "ratio-bounded", "ratio-grows"]),
    lambda inner: st.lists(inner, max_size=6), max_leaves=8)


@settings(max_examples=80, deadline=None)
@given(key=st.sampled_from(["shift", "values", "measure", "prompts", "seed"]),
       value=json_values)
def test_any_parameter_value_loads_or_is_a_one_line_error(key: str, value: Any) -> None:
    try:
        spec = make_spec([{**claim("exact-agreement", 4), key: value}])
    except ConfigError as error:
        assert "\n" not in str(error) and str(error).startswith("t: claims[0]")
    else:
        assert spec.claims[0].parameters[key] is not None


def test_a_bad_parameter_exits_2_before_anything_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text('[[groups]]\nname = "g"\nd = 2\nn = 4\n[[claims]]\nkind = "shift"\n'
                    'group = "g"\nshift = "w-scale"\nvalues = [1, -2]\n'
                    'measure = "ratio-bounded"\ntolerance = 4\n')
    assert main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "values must suit shift w-scale" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("name", ["reproduce", "reproduce-quick"])
def test_reproduce_has_a_shift_section(name: str) -> None:
    spec = builtin_spec(name, Registries())
    shift = [c for c in spec.claims if c.section == "Shift"]
    assert "Shift" in spec.sections and all(c.kind in ("shift", "shift-growth") for c in shift)
    assert all(c.group == "shift-lsa" and c.source for c in shift)  # claims on the LSA only
    exact = {c.parameters["shift"] for c in shift if c.parameters.get("measure") ==
             "exact-agreement"}
    assert exact == set(SHIFT_KINDS)
    assert all(c.tolerance == 4 for c in shift if c.kind == "shift-growth"
               or c.parameters["measure"] == "exact-agreement")
    assert {c.parameters["shift"] for c in shift if c.kind == "shift-growth"} == {
        "query-scale", "w-scale", "w-mean"}
    assert {c.parameters["shift"] for c in shift if c.parameters.get("measure") ==
            "ratio-grows"} == {"x-scale"}
    measured = [m for m in spec.measurements if m.section == "Shift"]
    assert {m.parameters["shift"] for m in measured} == {"query-scale", "w-scale", "w-mean",
                                                        "x-scale"}
    assert all(m.groups == ("shift-lsa", "shift-softmax") for m in measured)
    assert not any("descriptive" in (c.statement or "") for c in spec.claims)
    for c in shift:  # values on both sides of the training value
        values, config = c.parameters["values"], spec.group(c.group).points[0].config
        start = {"n": config.task.n, "sigma": config.task.sigma, "w-mean": 0.0}.get(
            c.parameters["shift"], 1.0)
        assert min(values) < start < max(values) and start in values
    lsa_run, softmax_run = (spec.group(g).points[0].config for g in ("shift-lsa",
                                                                     "shift-softmax"))
    assert (lsa_run.model_name, softmax_run.model_name) == ("lsa", "softmax")
    assert lsa_run.task == softmax_run.task  # the same task
    assert (lsa_run.task.d, lsa_run.task.n, lsa_run.task.sigma) == (5, 20, 0.5)


def test_a_trained_lsa_matches_its_exact_curve_and_the_measurement_is_reused(
        tmp_path: Path) -> None:
    """Monte Carlo losses of a real (briefly trained) LSA against the closed-form population
    loss of its read-out. The sweep stage measures; checking the claim only reads, refusing
    with one line before the measurement; a second sweep stage reuses the folder."""
    from iclab.runs.pipeline import run_training

    spec = parse_spec({"groups": [{"name": "g", "d": 2, "n": 4, "sigma": 0.5, "steps": 60,
                                   "batch": 256, "eval_prompts": 200}],
                       "claims": [claim("exact-agreement", 4, shift="w-mean",
                                        values=[-1.0, 0.0, 3.0], prompts=2000)]}, "t",
                      Registries())
    (point,) = spec.points()
    result = run_training(point.config, run_dir(tmp_path, point.run_id), progress=False)
    records = {point.run_id: RunRecord(point, result)}
    with pytest.raises(ConfigError, match="run the sweep again to measure them") as info:
        evaluate_claims(spec, records, ClaimRegistry(), out_dir=tmp_path)
    assert "\n" not in str(info.value)
    folder = shift_folder(run_dir(tmp_path, point.run_id), spec.claims[0].parameters)
    assert not folder.exists()  # checking the claim evaluated nothing
    measure_runs(spec, tmp_path)
    (verdict,) = evaluate_claims(spec, records, ClaimRegistry(), out_dir=tmp_path)
    assert verdict.holds and 0 <= verdict.value <= 4
    data = json.loads((folder / "shift.json").read_text())
    assert [r["value"] for r in data["rows"]] == [-1.0, 0.0, 3.0] and data["prompts"] == 2000
    assert data["rows"][2]["exact_loss"] > 2 * data["rows"][1]["exact_loss"]  # off centre
    stamp = (folder / "shift.json").stat().st_mtime_ns
    measure_runs(spec, tmp_path)
    assert evaluate_claims(spec, records, ClaimRegistry(), out_dir=tmp_path) == [verdict]
    assert (folder / "shift.json").stat().st_mtime_ns == stamp
