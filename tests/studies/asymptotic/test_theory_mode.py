"""``iclab theory --asymptotic``: the JSON and text outputs against the closed forms checked
in tests/theory/asymptotic, the simulation beside them, and bad values (one line, exit 2)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclab.cli.main import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["theory", "--asymptotic", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_ridgeless(capsys: pytest.CaptureFixture[str]) -> None:
    """kappa = inf, lam = 0, tau < 1: e = sigma^2/(1 - tau) + r^2 (1 - tau) with r^2 =
    1/(1 + x*), sigma^2 = 1 + rho - r^2, x* = (1 + rho)/alpha (min-norm least squares on
    isotropic features); e_IDG = e_ICL."""
    code, out, err = run(["--tau", "0.5", "--alpha", "2", "--rho", "0.2", "--json"], capsys)
    assert code == 0, err
    record = json.loads(out)
    r2 = 1 / (1 + 1.2 / 2)
    expected = (1.2 - r2) / 0.5 + r2 * 0.5
    assert record["e_icl"] == pytest.approx(expected, rel=1e-12)
    assert record["e_idg"] == record["e_icl"]
    assert (record["tau"], record["alpha"], record["kappa"], record["rho"], record["lam"]) == (
        0.5, 2.0, "inf", 0.2, 0.0)


def test_json_finite_kappa_and_simulation(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--tau", "2", "--kappa", "0.5", "--rho", "0.1", "--json",
                          "--simulate-d", "12", "--seed", "3"], capsys)
    assert code == 0, err
    record = json.loads(out)
    assert 0 < record["e_idg"] < record["e_icl"]
    sim = record["simulation"]
    assert (sim["d"], sim["n"], sim["k"], sim["N"], sim["repeats"], sim["seed"]) == (
        12, 288, 6, 12, 2, 3)
    assert sim["e_idg"] < sim["e_icl"]  # a pool of 6 tasks: memorised


def test_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--tau", "0.5", "--kappa", "2", "--lam", "0.1"], capsys)
    assert code == 0
    assert "e_ICL (d -> inf)" in out and "deterministic equivalent" in out


@settings(max_examples=30, deadline=None)
@given(flag=st.sampled_from(["--tau", "--alpha", "--kappa", "--rho", "--lam"]),
       value=st.sampled_from(["-1", "nan", "0", "-inf", "1e9", "abc"]))
def test_bad_values_one_line(flag: str, value: str) -> None:
    argv = ["theory", "--asymptotic", "--tau", "0.5", flag, value]
    if flag in ("--rho", "--lam") and value == "0":
        return  # allowed
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == 2
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1 and flag in lines[0], lines


@pytest.mark.parametrize("argv, message", [
    (["--tau", "1"], "diverges"),
    ([], "needs --tau"),
    (["--tau", "0.5", "--d", "3"], "not --d"),
    (["--tau", "0.5", "--simulate-d", "1"], "--simulate-d"),
    (["--tau", "0.5", "--repeats", "2"], "needs --simulate-d"),
])
def test_refusals(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1


def test_mode_options_need_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["theory", "--tau", "0.5"]) == 2
    assert "needs --asymptotic" in capsys.readouterr().err
    assert main(["theory", "--n", "5"]) == 2
    assert "--d is required" in capsys.readouterr().err
