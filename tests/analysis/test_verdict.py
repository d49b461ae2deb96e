"""Verdicts need evidence: a precise enough test loss and, with a read-out, a Gamma near Gamma*;
without it "undetermined" (or "not optimal" when the evidence says so), and never a NaN."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iclab.analysis.depth_verdict import judge_depth
from iclab.analysis.verdict import judge
from iclab.cli.certify import verdict as certify_verdict
from iclab.cli.main import main


def result(loss: float, se: float, star: float = 1.0, gamma_err: float | None = None,
           **extra: float) -> dict[str, float]:
    out = {"test_loss": loss, "test_loss_stderr": se, "loss_star": star, **extra}
    if gamma_err is not None:
        out["gamma_rel_err"] = gamma_err
    return out


@pytest.mark.parametrize(("numbers", "expected"), [
    # 4 se = 0.04 of L* = 1 (within 5 %), z = 1: optimal
    (result(1.01, 0.01, gamma_err=0.01), "optimal"),
    # the same loss but 4 se = 0.4 of L*: too imprecise to say
    (result(1.01, 0.1, gamma_err=0.01), "undetermined"),
    # imprecise, but 6 se above L*: the evidence says not optimal
    (result(1.6, 0.1, gamma_err=0.01), "not optimal"),
    # the loss agrees, the read-out does not (30 % off Gamma*)
    (result(1.0, 0.001, gamma_err=0.3), "not optimal"),
    # a Monte Carlo Gamma* with 5 % relative error widens the read-out's tolerance to 30 %
    (result(1.0, 0.001, gamma_err=0.25, eta_star=0.1, eta_star_stderr=0.005), "optimal"),
    # the issue's run: untrained (Gamma 99.97 % off), 50 prompts (4 se = 300 % of L*)
    (result(3.66, 0.858, 1.145, gamma_err=0.9997), "not optimal"),
    (result(3.66, 0.858, 1.145), "undetermined"),
    (result(math.nan, 0.01), "undetermined"),
    (result(1.0, 0.01, star=0.0), "undetermined"),
])
def test_linear_verdicts(numbers: dict[str, float], expected: str) -> None:
    assert judge(numbers)["verdict"] == expected


def test_verdicts_of_models_without_a_read_out() -> None:
    assert judge(result(1.01, 0.01), linear=False)["verdict"] == "at L*"
    assert judge(result(1.01, 0.1), linear=False)["verdict"] == "undetermined"
    assert judge(result(0.5, 0.1), linear=False)["verdict"] == "below L*"
    assert judge(result(1.01, 0.01, gamma_err=0.9), linear=False)["verdict"] == "at L*"
    deep = {"test_loss": 1.0, "test_loss_stderr": 0.1, "gd_steps_loss": 1.0}
    assert judge_depth(deep, sparse=True)["verdict"] == "undetermined"
    deep["test_loss_stderr"] = 0.001
    assert judge_depth(deep, sparse=True)["verdict"] == "optimal"
    assert judge_depth(deep, sparse=False)["verdict"] == "at the optimal L-step GD"


finite_or_not = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                          st.floats(-1e6, 1e6), st.none())


@given(loss=finite_or_not, se=finite_or_not, star=finite_or_not, gamma=finite_or_not,
       linear=st.booleans())
def test_a_verdict_is_always_one_of_its_words_and_json_without_nan(
        loss: float | None, se: float | None, star: float | None, gamma: float | None,
        linear: bool) -> None:
    numbers = {"test_loss": loss, "test_loss_stderr": se, "loss_star": star,
               "gamma_rel_err": gamma}
    out = judge(numbers, linear=linear)
    json.dumps(out, allow_nan=False)
    words = ({"optimal", "not optimal", "undetermined"} if linear
             else {"at L*", "above L*", "below L*", "undetermined"})
    assert out["verdict"] in words and out["verdict_needs"]
    if out["verdict"] in ("optimal", "at L*"):  # claimed only with its evidence
        assert se is not None and star is not None and 0 <= 4 * se <= 0.05 * star


def test_certify_never_certifies_beside_a_missing_z() -> None:
    report = {"z": 0.1, "z_paired": 0.2, "paired_excess_stderr": 1e-4, "bound": 1.0}
    assert certify_verdict(report).startswith("certified")
    for key in ("z", "z_paired", "paired_excess_stderr", "bound"):
        for bad in (None, math.inf, math.nan):
            assert certify_verdict({**report, key: bad}).startswith("undetermined")
    assert certify_verdict({**report, "paired_excess_stderr": 0.1}).startswith("undetermined")
    assert certify_verdict({**report, "z_paired": 5.0}).startswith("not optimal")


def test_the_issues_untrained_run_is_not_called_optimal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["train", "--d", "3", "--n", "10", "--sigma", "0.5", "--steps", "1",
                 "--eval-prompts", "50", "--quiet", "--out", str(out)]) == 0
    saved = json.loads((out / "result.json").read_text())
    assert saved["verdict"] == "not optimal"
    assert saved["verdict_evidence"]["gamma_rel_err"] > 0.99
    assert saved["verdict_evidence"]["precision"] > 1  # 4 se are more than L* itself
    printed = capsys.readouterr().out
    assert "verdict                      not optimal" in printed
    assert "because                      the read-out's Gamma is outside its tolerance" in printed
