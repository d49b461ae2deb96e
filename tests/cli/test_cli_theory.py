"""``iclab theory``: closed forms against independent numpy, Monte Carlo, and bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from iclab.cli.main import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def theory_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    bayes = [] if "two-layer-relu" in argv else ["--bayes-prompts", "500"]  # Gaussian only
    code, out, err = run(["theory", *argv, "--json", *bayes], capsys)
    assert code == 0, err
    record: dict[str, Any] = json.loads(out)
    return record


def independent_optimum(n: int, sigma: float, sx: np.ndarray, sw: np.ndarray
                        ) -> tuple[np.ndarray, float]:
    """Gamma* = Sigma_w Sigma_x K^-1 by an explicit inverse, L(Gamma*) from its full formula."""
    K = (n + 1) * sx @ sw @ sx + (np.trace(sw @ sx) + sigma**2) * sx
    gamma = sw @ sx @ np.linalg.inv(K)
    loss = (np.trace(sx @ sw) + sigma**2 - 2 * n * np.trace(sx @ gamma @ sx @ sw)
            + n * np.trace(sx @ gamma @ K @ gamma.T))
    return gamma, float(loss)


def random_spd(rng: np.random.Generator, d: int) -> np.ndarray:
    A = rng.standard_normal((d, d))
    matrix = A @ A.T + 0.3 * np.eye(d)
    return (matrix + matrix.T) / 2


def save(path: Path, matrix: np.ndarray) -> str:
    np.save(path, matrix)
    return str(path)


@pytest.mark.parametrize("case", ["random", "identity_w", "inverse", "diagonal"])
def test_gaussian_output_matches_an_independent_computation(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(["random", "identity_w", "inverse", "diagonal"].index(case))
    d, n, sigma = 4, 9, 0.7
    sx = random_spd(rng, d)
    sw = {
        "random": random_spd(rng, d),
        "identity_w": np.eye(d),
        "inverse": np.linalg.inv(sx),
        "diagonal": np.diag(rng.uniform(0.1, 5.0, d)),
    }[case]
    if case == "diagonal":
        sx = np.diag(rng.uniform(0.1, 5.0, d))
    sw = (sw + sw.T) / 2
    argv = ["--d", str(d), "--n", str(n), "--sigma", str(sigma),
            "--cov-x", save(tmp_path / "x.npy", sx)]
    if case != "identity_w":
        argv += ["--cov-w", save(tmp_path / "w.npy", sw)]
    record = theory_json(argv, capsys)
    gamma, loss = independent_optimum(n, sigma, sx, sw)
    got = np.array(record["gamma"])
    assert np.max(np.abs(got - gamma)) <= 1e-9 * np.max(np.abs(gamma))
    assert abs(record["loss"] - loss) <= 1e-9 * abs(loss)
    assert record["method"] == "closed-form" and record["stderr"] is None
    assert record["eta"] is None                           # none of these is a multiple of I
    assert 0 < record["bayes_loss"] < record["loss"]
    if case == "inverse":                                  # Theorem 2: Gamma* = eta* Sigma^-1
        eta = 1 / (n + d + 1 + sigma**2)
        np.testing.assert_allclose(got, eta * np.linalg.inv(sx), rtol=1e-9, atol=1e-12)


def test_isotropic_gaussian_reports_eta(capsys: pytest.CaptureFixture[str]) -> None:
    record = theory_json(["--d", "5", "--n", "10", "--sigma", "0.1"], capsys)
    assert record["eta"] == pytest.approx(1 / (10 + 5 + 1 + 0.01), rel=1e-12)
    assert record["loss"] == pytest.approx(5 * (6.01) / 16.01 + 0.01, rel=1e-12)
    assert record["isotropic"] is True and record["family"] == "linear-gaussian"


def independent_two_layer_eta(n: int, d: int, sigma: float, m: int, prompts: int
                              ) -> tuple[float, float]:
    """eta = E[y_q x_q.v] / E[(x_q.v)^2], v = X^T y, by simulating prompts in numpy.

    The denominator is averaged over x_q exactly (||v||^2), the numerator over 16 queries per
    prompt. Returns (eta, relative standard error) by the delta method.
    """
    rng = np.random.default_rng(12345)
    queries, chunk = 16, 50_000
    sums = np.zeros(5)
    for start in range(0, prompts, chunk):
        size = min(chunk, prompts - start)
        W = rng.standard_normal((size, m, d)) / math.sqrt(d)
        a = rng.standard_normal((size, m))
        x = rng.standard_normal((size, n + queries, d))
        hidden = np.maximum(np.einsum("bkd,bmd->bkm", x, W), 0.0)
        y = hidden @ a[..., None] / math.sqrt(m)
        y = y[..., 0] + sigma * rng.standard_normal((size, n + queries))
        v = np.einsum("bkd,bk->bd", x[:, :n], y[:, :n])
        num = np.einsum("bkd,bd,bk->b", x[:, n:], v, y[:, n:]) / queries
        den = (v * v).sum(-1)
        sums += [num.sum(), den.sum(), (num**2).sum(), (den**2).sum(), (num * den).sum()]
    mean_num, mean_den = sums[0] / prompts, sums[1] / prompts
    var_num = sums[2] / prompts - mean_num**2
    var_den = sums[3] / prompts - mean_den**2
    cov = sums[4] / prompts - mean_num * mean_den
    eta = mean_num / mean_den
    rel_var = var_num / mean_num**2 - 2 * cov / (mean_num * mean_den) + var_den / mean_den**2
    return eta, math.sqrt(rel_var / prompts)


def test_two_layer_relu_eta_against_an_independent_estimate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    d, n, sigma, m = 3, 10, 0.5, 6
    record = theory_json(["--family", "two-layer-relu", "--width", str(m), "--d", str(d),
                          "--n", str(n), "--sigma", str(sigma)], capsys)
    assert record["width"] == m and record["bayes_loss"] is None
    eta, rel_se = independent_two_layer_eta(n, d, sigma, m, 400_000)
    assert rel_se < 0.003
    assert abs(record["eta"] / eta - 1) < 0.01
    mc = theory_json(["--family", "two-layer-relu", "--width", str(m), "--d", str(d),
                      "--n", str(n), "--sigma", str(sigma), "--monte-carlo"], capsys)
    assert mc["method"] == "monte-carlo" and mc["stderr"]["eta"] <= 0.002 * mc["eta"]
    assert abs(mc["eta"] / eta - 1) < 0.01


def test_readable_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["theory", "--d", "3", "--n", "10", "--sigma", "0.5",
                        "--family", "anisotropic", "--bayes-prompts", "500"], capsys)
    assert code == 0
    assert "anisotropic" in out and "Gamma* =" in out and "not a multiple of I" in out


def bad_file(tmp_path: Path, kind: str) -> str:
    path = tmp_path / f"{kind}.npy"
    if kind == "asymmetric":
        np.save(path, np.array([[1.0, 0.5], [0.1, 1.0]]))
    elif kind == "indefinite":
        np.save(path, np.array([[1.0, 2.0], [2.0, 1.0]]))
    elif kind == "shape":
        np.save(path, np.eye(3))
    elif kind == "unreadable":
        path.write_bytes(b"this is not a numpy file")
    return str(path)                                   # "missing": never written


@pytest.mark.parametrize("kind", ["asymmetric", "indefinite", "shape", "unreadable", "missing"])
@pytest.mark.parametrize("option", ["--cov-x", "--cov-w"])
def test_bad_covariance_files(kind: str, option: str, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    path = bad_file(tmp_path, kind)
    code, out, err = run(["theory", "--d", "2", "--n", "5", "--sigma", "0.1", option, path],
                         capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("iclab: error: ") and path in err


@pytest.mark.parametrize("argv, message", [
    (["--family", "nope"], "unknown family 'nope'; allowed: linear-gaussian"),
    (["--family", "relu", "--width", "3"], "width applies only to family two-layer-relu"),
    (["--family", "relu", "--cov-x", "missing.npy"],
     "--cov-x applies only to family linear-gaussian"),
    (["--family", "two-layer-relu", "--width", "0"], "width must be an integer >= 1"),
    (["--precision", "0"], "--precision must be a number from 1e-06 to 0.5, got 0.0"),
])
def test_bad_options(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["theory", "--d", "2", "--n", "5", "--sigma", "0.1", *argv], capsys)
    assert code == 2 and message in err and err.count("\n") == 1


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(matrix=arrays(np.float64, (2, 2), elements=st.floats(-3, 3, allow_nan=False)))
def test_any_non_spd_matrix_is_refused(
    matrix: np.ndarray, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    symmetric = np.allclose(matrix, matrix.T, rtol=0, atol=1e-8 * max(np.abs(matrix).max(), 1))
    smallest = np.linalg.eigvalsh((matrix + matrix.T) / 2)[0]
    assume(not symmetric or smallest <= 1e-12 * max(np.abs(matrix).max(), 1e-300))
    path = save(tmp_path / "bad.npy", matrix)
    code, _, err = run(["theory", "--d", "2", "--n", "5", "--sigma", "0.1", "--cov-x", path],
                       capsys)
    assert code == 2 and err.count("\n") == 1


@settings(max_examples=25, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz-_0123456789", min_size=1, max_size=15)
       .filter(lambda s: s not in ("linear-gaussian", "relu", "two-layer-relu", "anisotropic")))
def test_unknown_family_names(name: str) -> None:
    assert main(["theory", "--d", "2", "--n", "3", "--sigma", "0", "--family", name]) == 2
