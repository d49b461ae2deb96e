"""``iclab theory`` with covariate laws and correlated contexts: the issue's numbers, checked
against the scalar closed form, an independent Monte Carlo and today's Gaussian output."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iclab.cli.main import main

# The standardised fourth moment mu4 of each law (E z^4 with E z^2 = 1): the uniform and
# Laplace densities integrated, +-1, and Student-t's excess kurtosis 6 / (nu - 4).
MU4 = {"uniform": 9 / 5, "rademacher": 1.0, "student-t:5": 3 + 6 / (5 - 4), "laplace": 6.0,
       "gaussian": 3.0}


def theory(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    law = any(flag in argv for flag in ("--context-correlation", "--context-covariance")) or (
        "--x-law" in argv and argv[argv.index("--x-law") + 1] != "gaussian")
    bayes = [] if law else ["--bayes-prompts", "500"]  # a Bayes risk: Gaussian x only
    code = main(["theory", *argv, "--json", *bayes])
    out, err = capsys.readouterr()
    assert code == 0, err

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in JSON output")

    record: dict[str, Any] = json.loads(out, parse_constant=refuse)
    return record


def scalar_gamma(mu4: float, s2: float, d: int, n: int, sigma: float) -> float:
    """gamma* for Sigma_x = s2 I, Sigma_w = I: s2 / (mu4 s2^2 + (n+d-2) s2^2 + sigma^2 s2),
    from E[x x^T x x^T] = (mu4_x + (d-1) s2^2) I for independent coordinates."""
    return s2 / (mu4 * s2**2 + (n + d - 2) * s2**2 + sigma**2 * s2)


@pytest.mark.parametrize(("law", "d", "n", "sigma", "twelfth"), [
    ("uniform", 10, 10, 0.0, True), ("rademacher", 5, 20, 0.5, False),
    ("student-t:5", 4, 10, 0.0, False), ("laplace", 6, 15, 0.3, False)])
def test_product_laws_are_closed_form_multiples_of_the_identity(
    law: str, d: int, n: int, sigma: float, twelfth: bool, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--x-law", law, "--d", str(d), "--n", str(n), "--sigma", str(sigma)]
    s2 = 1.0
    if twelfth:                                  # x ~ U(-1/2, 1/2)^d: Sigma_x = I / 12
        np.save(tmp_path / "twelfth.npy", np.eye(d) / 12)
        argv += ["--cov-x", str(tmp_path / "twelfth.npy")]
        s2 = 1 / 12
    record = theory(argv, capsys)
    gamma = scalar_gamma(MU4[law], s2, d, n, sigma)
    assert record["method"] == "closed-form" and record["x_law"] == law
    assert record["eta"] == pytest.approx(gamma, rel=1e-12)
    assert np.max(np.abs(np.array(record["gamma"]) - gamma * np.eye(d))) <= 1e-12 * gamma
    assert record["loss"] == pytest.approx(d * s2 + sigma**2 - n * d * s2**2 * gamma, rel=1e-12)
    gaussian = scalar_gamma(3.0, s2, d, n, sigma)              # the law matters
    assert abs(record["eta"] - gaussian) > 0.01 * gaussian
    assert record["n_eff"] is None and record["bayes_loss"] is None
    if twelfth:
        assert record["eta"] == pytest.approx(20 / 33, rel=1e-12)


@pytest.mark.parametrize("extra", [["--x-law", "gaussian"], ["--context-correlation", "0"]])
def test_the_gaussian_law_and_zero_correlation_give_todays_numbers(
    extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--d", "5", "--n", "20", "--sigma", "0.5"]
    today, record = theory(base, capsys), theory([*base, *extra], capsys)
    assert np.max(np.abs(np.array(record["gamma"]) - np.array(today["gamma"]))) <= 1e-12
    assert abs(record["loss"] - today["loss"]) <= 1e-12 and record["method"] == "closed-form"
    assert today["eta"] == pytest.approx(1 / (20 + 5 + 1 + 0.25), rel=1e-13)
    if "--context-correlation" in extra:
        assert record["n_eff"] == pytest.approx(20, abs=1e-9)
    else:
        assert record["n_eff"] is None and record["bayes_loss"] == today["bayes_loss"]


def ar1_loss_monte_carlo(eta: float, d: int, n: int, sigma: float, rho: float,
                         prompts: int) -> tuple[float, float]:
    """Mean squared error of eta x_q^T X^T y on AR(1) prompts drawn here with numpy (the
    recursion x_(i+1) = rho x_i + sqrt(1 - rho^2) z_(i+1)), and its standard error."""
    rng = np.random.default_rng(2024)
    errors = []
    for _ in range(prompts // 20_000):
        z = rng.standard_normal((20_000, n + 1, d))
        x = np.empty_like(z)
        x[:, 0] = z[:, 0]
        for i in range(1, n + 1):
            x[:, i] = rho * x[:, i - 1] + math.sqrt(1 - rho**2) * z[:, i]
        w = rng.standard_normal((20_000, d))
        y = np.einsum("bid,bd->bi", x, w) + sigma * rng.standard_normal((20_000, n + 1))
        prediction = eta * np.einsum("bd,bid,bi->b", x[:, n], x[:, :n], y[:, :n])
        errors.append((prediction - y[:, n]) ** 2)
    e = np.concatenate(errors)
    return float(e.mean()), float(e.std(ddof=1) / math.sqrt(e.size))


def test_ar1_contexts_against_an_independent_monte_carlo(
        capsys: pytest.CaptureFixture[str]) -> None:
    record = theory(["--context-correlation", "0.5", "--d", "5", "--n", "20", "--sigma", "0.5"],
                    capsys)
    assert record["method"] == "closed-form" and record["context_correlation"] == 0.5
    assert 0 < record["n_eff"] < 20 and record["eta"] is not None
    mean, stderr = ar1_loss_monte_carlo(record["eta"], 5, 20, 0.5, 0.5, 100_000)
    assert abs(mean - record["loss"]) <= 4 * stderr
    independent = 1 / (20 + 5 + 1 + 0.25)                      # Theorem 1's loss is rejected
    assert abs(mean - (5 + 0.25 - 20 * 5 * independent)) > 8 * stderr


def test_a_position_covariance_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    n, rho = 6, 0.3
    index = np.arange(n + 1)
    np.save(tmp_path / "R.npy", rho ** np.abs(index[:, None] - index[None, :]))
    from_file = theory(["--context-covariance", str(tmp_path / "R.npy"), "--d", "3", "--n",
                        str(n), "--sigma", "0.2"], capsys)
    from_rho = theory(["--context-correlation", str(rho), "--d", "3", "--n", str(n), "--sigma",
                       "0.2"], capsys)
    assert from_file["loss"] == pytest.approx(from_rho["loss"], rel=1e-12)
    assert from_file["n_eff"] == pytest.approx(from_rho["n_eff"], rel=1e-9)
    assert len(from_file["context_covariance"]) == n + 1


def test_readable_table_names_the_law_and_n_eff(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["theory", "--d", "3", "--n", "5", "--sigma", "0", "--x-law", "laplace"]) == 0
    out = capsys.readouterr().out
    assert "x law" in out and "laplace" in out and "n_eff" not in out
    assert main(["theory", "--d", "3", "--n", "5", "--sigma", "0", "--context-correlation",
                 "0.4"]) == 0
    assert "n_eff" in capsys.readouterr().out


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["theory", "--d", "2", "--n", "3", "--sigma", "0.1", *argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    return err


def test_student_t_without_a_fourth_moment_exits_2_with_one_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert "4 < NU <= 1e+06" in refused(["--x-law", "student-t:3"], capsys)
    assert "4 < NU <= 1e+06" in refused(["--x-law", "student-t:4"], capsys)
    assert main(["theory", "--d", "2", "--n", "3", "--sigma", "0.1", "--x-law",
                 "student-t:4.5"]) == 0


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rho=st.floats(allow_nan=True, allow_infinity=True))
def test_context_correlation_outside_the_open_unit_interval_exits_2(
        rho: float, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--context-correlation", repr(rho)]
    if math.isfinite(rho) and -1 < rho < 1:
        assert main(["theory", "--d", "2", "--n", "3", "--sigma", "0.1", *argv]) == 0
        capsys.readouterr()
    else:
        assert "context_correlation must be a" in refused(argv, capsys)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(k=st.integers(1, 8).filter(lambda k: k != 4))
def test_a_position_covariance_of_the_wrong_size_exits_2(
        k: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "R.npy", np.eye(k))
    err = refused(["--context-covariance", str(tmp_path / "R.npy")], capsys)
    assert "R.npy" in err and "shape (4, 4)" in err


@pytest.mark.parametrize(("argv", "message"), [
    (["--x-law", "cauchy"], "unknown covariate law 'cauchy'"),
    (["--x-law", "student-t"], "needs its degrees of freedom"),
    (["--family", "relu", "--x-law", "uniform"], "--x-law applies only to family linear-gauss"),
    (["--family", "relu", "--context-correlation", "0.5"], "--context-correlation applies only"),
    (["--family", "relu", "--context-covariance", "R.npy"], "--context-covariance applies only"),
    (["--x-law", "uniform", "--context-correlation", "0.5"], "need x_law gaussian"),
    (["--context-correlation", "0.5", "--monte-carlo"], "closed-form optimum only"),
])
def test_bad_combinations(argv: list[str], message: str,
                          capsys: pytest.CaptureFixture[str]) -> None:
    assert message in refused(argv, capsys)
