"""Training on the linear family with a covariate law or correlated contexts: the run folder,
result.json against the closed forms, and bad input refused before anything is written."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iclab.cli.main import main
from iclab.config.train import TrainConfig
from iclab.runs import run_training as train
from iclab.studies.covariates.correlated import isotropic_correlated_optimum
from iclab.theory.rotation_invariant import relu_optimum

QUICK = ["--steps", "30", "--batch", "256", "--eval-prompts", "2000", "--quiet"]


def twelfth(tmp_path: Path, d: int) -> str:
    """x ~ U(-1/2, 1/2)^d has Sigma_x = I / 12."""
    path = tmp_path / "twelfth.npy"
    np.save(path, np.eye(d) / 12)
    return str(path)


def test_a_uniform_law_run_writes_its_law_and_is_judged_against_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    argv = ["train", "--x-law", "uniform", "--d", "3", "--n", "4", "--sigma", "0", "--cov-x",
            twelfth(tmp_path, 3), "--out", str(out), *QUICK]
    assert main(argv) == 0
    config = json.loads((out / "config.json").read_text())
    result = json.loads((out / "result.json").read_text())
    assert config["x_law"] == "uniform" and config["cov_x"][0][0] == pytest.approx(1 / 12)
    # gamma* = s^2 / (mu4_x + (n+d-2) s^4) with s^2 = 1/12, mu4_x = E x^4 = 1/80
    gamma = (1 / 12) / (1 / 80 + 5 / 144)
    assert result["eta_star"] == pytest.approx(gamma, rel=1e-12)
    assert result["sampler"] == "prompts" and "n_eff" not in result
    assert "eta*" in capsys.readouterr().out


def test_an_ar1_run_reports_n_eff(tmp_path: Path) -> None:
    config = TrainConfig.flat(d=2, n=5, sigma=0.5, context_correlation=0.6, steps=20,
                              batch=128, eval_prompts=2000)
    result = train(config, tmp_path / "run", progress=False)
    index = np.arange(6)
    g, loss = isotropic_correlated_optimum(0.6 ** np.abs(index[:, None] - index[None, :]), 2,
                                           0.5)
    assert result["eta_star"] == pytest.approx(g, rel=1e-10)
    assert result["loss_star"] == pytest.approx(loss, rel=1e-10)
    assert 0 < result["n_eff"] < 5


def refused(tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    out = tmp_path / "refused"
    code = main(["train", "--d", "2", "--n", "3", "--sigma", "0.1", *argv, "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()
    return err


@pytest.mark.parametrize(("argv", "message"), [
    (["--x-law", "student-t:3"], "student-t needs 4 < NU <= 1e+06"),
    (["--x-law", "nope"], "unknown covariate law 'nope'"),
    (["--context-correlation", "1.5"], "context_correlation must be a number in (-1, 1)"),
    (["--context-correlation", "-1"], "context_correlation must be a number in (-1, 1)"),
    (["--family", "relu", "--x-law", "uniform"], "--x-law applies only to family linear-gauss"),
    (["--x-law", "laplace", "--context-correlation", "0.3"], "need x_law gaussian"),
    (["--x-law", "uniform", "--sampler", "statistics"], "with x_law 'uniform'"),
])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
        argv: list[str], message: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert message in refused(tmp_path, argv, capsys)


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(k=st.integers(1, 7).filter(lambda k: k != 4))
def test_a_context_covariance_of_the_wrong_size_is_refused(
        k: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "R.npy", np.eye(k))
    err = refused(tmp_path, ["--context-covariance", str(tmp_path / "R.npy")], capsys)
    assert "R.npy" in err and "shape (4, 4)" in err


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rho=st.one_of(st.floats(max_value=-1), st.floats(min_value=1),
                     st.sampled_from([math.nan, math.inf])))
def test_context_correlation_outside_the_open_interval_is_refused(
        rho: float, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "context_correlation" in refused(tmp_path, ["--context-correlation", repr(rho)],
                                            capsys)


@pytest.mark.slow
def test_the_uniform_law_run_of_the_issue(tmp_path: Path) -> None:
    """iclab train --x-law uniform --d 10 --n 10 --sigma 0 --cov-x I/12: Gamma within 2 %."""
    out = tmp_path / "run"
    assert main(["train", "--x-law", "uniform", "--d", "10", "--n", "10", "--sigma", "0",
                 "--cov-x", twelfth(tmp_path, 10), "--seed", "0", "--quiet",
                 "--out", str(out)]) == 0
    result = json.loads((out / "result.json").read_text())
    assert result["eta_star"] == pytest.approx(20 / 33, rel=1e-12)
    assert result["gamma_rel_err"] < 0.02 and result["eta_rel_err"] < 0.02


@pytest.mark.slow
def test_the_relu_run_of_the_issue(tmp_path: Path) -> None:
    """iclab train --family relu --d 5 --n 20 --sigma 0: eta within 1 % of the theory."""
    result = train(TrainConfig.flat(d=5, n=20, sigma=0.0, family="relu"), tmp_path / "run",
                   progress=False)
    assert result["eta_star"] == pytest.approx(relu_optimum(20, 5, 0.0).eta, rel=1e-14)
    assert result["eta_rel_err"] < 0.01


@pytest.mark.slow
def test_an_ar1_run_reaches_its_optimum(tmp_path: Path) -> None:
    config = TrainConfig.flat(d=5, n=20, sigma=0.5, context_correlation=0.5)
    result = train(config, tmp_path / "run", progress=False)
    assert result["gamma_rel_err"] < 0.02 and 13 < result["n_eff"] < 14
