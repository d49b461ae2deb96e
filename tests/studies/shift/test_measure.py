"""evaluate_shift at the one-layer optimum, against closed forms and independent estimates;
its outputs."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from iclab.algorithms import lsa_from_gamma
from iclab.algorithms.baselines import BayesPosteriorMean
from iclab.algorithms.posterior_mean import GaussianPosteriorMean
from iclab.models.lsa.options import LSAOptions
from iclab.studies.shift.measure import (
    PREDICTORS,
    curve_values,
    evaluate_shift,
    shift_curves,
    write_shift_outputs,
)
from iclab.tasks.linear_gaussian import LinearGaussian
from iclab.theory.bayes import bayes_risk
from iclab.theory.gaussian import gaussian_optimum, gd_term_loss, loss_star_isotropic
from iclab.utils.errors import ConfigError
from iclab.utils.threads import intra_op_threads

D, N, SIGMA = 5, 20, 0.5
BASE = LinearGaussian(D, N, SIGMA)
OPTIMUM = gaussian_optimum(N, SIGMA, d=D)
MODEL = lsa_from_gamma(OPTIMUM.gamma)
READOUT = tuple(t.detach().numpy() for t in MODEL.effective())
PROMPTS = 4000


@pytest.fixture(autouse=True)
def single_thread() -> Iterator[None]:
    """Batched solves of tiny matrices are far faster with one thread on a busy machine."""
    with intra_op_threads(1):
        yield


def rows_for(kind: str, values: list[float], prompts: int = PROMPTS, seed: int = 0,
             with_readout: bool = True) -> list[dict[str, object]]:
    readout = READOUT if with_readout else None
    return evaluate_shift(MODEL, readout, BASE, OPTIMUM.gamma, kind, values, prompts, seed)  # type: ignore[arg-type]


def z(row: dict[str, object], measured: str, exact: float) -> float:
    return (float(row[f"{measured}_loss"]) - exact) / float(row[f"{measured}_loss_stderr"])  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def x_scale_rows() -> list[dict[str, object]]:
    return rows_for("x-scale", [0.5, 1.0, 2.0, 4.0])


def test_row_keys(x_scale_rows: list[dict[str, object]]) -> None:
    expected = {"value", "exact_loss", "gd_exact_loss"}
    expected |= {f"{p}_loss{s}" for p in PREDICTORS for s in ("", "_stderr")}
    assert [set(row) for row in x_scale_rows] == [expected] * 4
    assert [row["value"] for row in x_scale_rows] == [0.5, 1.0, 2.0, 4.0]


def test_covariate_shift_against_closed_forms(x_scale_rows: list[dict[str, object]]) -> None:
    """x-scale c is the training law with Sigma_x -> c^2 I: gd_term_loss gives the exact loss."""
    for row in x_scale_rows:
        c2 = float(row["value"]) ** 2  # type: ignore[arg-type]
        exact = gd_term_loss(OPTIMUM.gamma, N, SIGMA, c2 * np.eye(D), np.eye(D))
        assert float(row["exact_loss"]) == pytest.approx(exact, rel=1e-10)  # type: ignore[arg-type]
        assert float(row["gd_exact_loss"]) == pytest.approx(exact, rel=1e-10)  # type: ignore[arg-type]
        assert abs(z(row, "model", exact)) <= 4
    # At c = 1: Theorem 1's L*.
    assert float(x_scale_rows[1]["exact_loss"]) == pytest.approx(  # type: ignore[arg-type]
        loss_star_isotropic(N, D, SIGMA), rel=1e-12)


def test_paired_predictors(x_scale_rows: list[dict[str, object]]) -> None:
    """The constructed model is one-step GD with Gamma*, and an x-scale shift leaves the task
    prior and noise alone, so Bayes at the test law is ridge at the training prior: on the same
    prompts their losses agree to rounding."""
    for row in x_scale_rows:
        assert row["model_loss"] == pytest.approx(row["gd_loss"], rel=1e-9)
        assert row["bayes_loss"] == pytest.approx(row["ridge_loss"], rel=1e-9)


def test_covariate_shift_breaks_the_model(x_scale_rows: list[dict[str, object]]) -> None:
    ratio = [float(r["model_loss"]) / float(r["bayes_loss"]) for r in x_scale_rows]  # type: ignore[arg-type]
    assert ratio[3] > 10 * ratio[1]


def test_ols_against_its_closed_form(x_scale_rows: list[dict[str, object]]) -> None:
    """OLS is scale-equivariant; its risk is sigma^2 (1 + d / (n - d - 1)) for x ~ N(0, I)."""
    exact = SIGMA**2 * (1 + D / (N - D - 1))
    for row in x_scale_rows:
        assert abs(z(row, "ols", exact)) <= 4


def test_bayes_against_the_bayes_risk() -> None:
    """Test-law Bayes loss against ``bayes_risk`` (a Rao-Blackwellised estimate): at a new noise
    level, under a narrower task prior, and off the prior's centre (the posterior covariance
    does not depend on the prior mean, so neither does the risk)."""
    rows = rows_for("sigma", [0.0, 1.5]) + rows_for("w-scale", [0.3]) + rows_for("w-mean", [3.0])
    laws = [(0.0, 1.0), (1.5, 1.0), (SIGMA, 0.09), (SIGMA, 1.0)]
    for row, (sigma, prior) in zip(rows, laws, strict=True):
        risk, risk_se = bayes_risk(N, sigma, np.eye(D), prior * np.eye(D), prompts=4000, seed=1)
        if sigma == 0:  # noiseless with n > d: the posterior is the true w
            assert risk < 1e-12 and float(row["bayes_loss"]) < 1e-10  # type: ignore[arg-type]
            continue
        difference = float(row["bayes_loss"]) - risk  # type: ignore[arg-type]
        assert abs(difference) <= 4 * math.hypot(float(row["bayes_loss_stderr"]), risk_se)  # type: ignore[arg-type]


@pytest.mark.parametrize(("kind", "values"), [("n", [5, 20, 80]), ("w-scale", [0.5, 4.0]),
                                              ("sigma", [0.0, 2.0])])
def test_gd_exact_loss_against_gd_term_loss(kind: str, values: list[float]) -> None:
    for row in rows_for(kind, values, prompts=2000):
        v = float(row["value"])  # type: ignore[arg-type]
        n, sigma, cov_w = N, SIGMA, np.eye(D)
        if kind == "n":
            n = int(v)
        elif kind == "sigma":
            sigma = v
        else:
            cov_w = v**2 * np.eye(D)
        exact = gd_term_loss(OPTIMUM.gamma, n, sigma, np.eye(D), cov_w)
        assert float(row["gd_exact_loss"]) == pytest.approx(exact, rel=1e-10)  # type: ignore[arg-type]
        assert abs(z(row, "model", exact)) <= 4


def test_normalised_model_under_a_change_of_n() -> None:
    """A model that divides by n and implements Gamma* at the training n predicts
    (N / n') x_q^T Gamma* X^T y at n' examples."""
    model = lsa_from_gamma(OPTIMUM.gamma, LSAOptions(normalise=True), n=N)
    readout = tuple(t.detach().numpy() for t in model.effective())
    rows = evaluate_shift(model, readout, BASE, OPTIMUM.gamma, "n", [5, 80], 2000, 0,  # type: ignore[arg-type]
                          normalise=True)
    for row in rows:
        n = int(row["value"])  # type: ignore[call-overload]
        exact = gd_term_loss(OPTIMUM.gamma * N / n, n, SIGMA, np.eye(D), np.eye(D))
        assert float(row["exact_loss"]) == pytest.approx(exact, rel=1e-10)  # type: ignore[arg-type]
        assert abs(z(row, "model", exact)) <= 4
        assert abs(float(row["exact_loss"]) / float(row["gd_exact_loss"]) - 1) > 0.05  # type: ignore[arg-type]


def test_seeded_and_paired() -> None:
    a, b = rows_for("w-mean", [1.0], 500, seed=3), rows_for("w-mean", [1.0], 500, seed=3)
    c = rows_for("w-mean", [1.0], 500, seed=4)
    assert a == b and a != c


def test_without_readout_and_any_predictor() -> None:
    def zero(X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
        return x_q.new_zeros(x_q.shape[0])

    [row] = evaluate_shift(zero, None, BASE, OPTIMUM.gamma, "query-scale", [2.0], 4000, 0)
    assert row["exact_loss"] is None
    # The zero predictor's loss is E[(w.x_q)^2] + sigma^2 = c^2 d + sigma^2.
    assert abs(z(row, "model", 4 * D + SIGMA**2)) <= 4


def test_posterior_mean_with_a_prior_mean_matches_the_centred_one() -> None:
    """Shifting w by mu and y by X mu shifts the posterior mean by mu (sigma > 0 and = 0)."""
    rng = np.random.default_rng(0)
    X = torch.as_tensor(rng.normal(size=(50, 4, 3)))
    y = torch.as_tensor(rng.normal(size=(50, 4)))
    mu = rng.normal(size=3)
    for sigma in (0.0, 0.7):
        moved = y + X @ torch.as_tensor(mu)
        shifted = GaussianPosteriorMean(sigma, np.eye(3) * 2, mu).fit(X, moved)
        centred = BayesPosteriorMean(sigma, np.eye(3) * 2).fit(X, y) + torch.as_tensor(mu)
        torch.testing.assert_close(shifted, centred, rtol=1e-9, atol=1e-9)


def test_bad_inputs_are_refused_before_any_work() -> None:
    for kind, values in [("bogus", [1.0]), ("x-scale", [1.0, -1.0]), ("n", [2.5]),
                         ("x-scale", [])]:
        with pytest.raises(ConfigError):
            evaluate_shift(MODEL, READOUT, BASE, OPTIMUM.gamma, kind, values, 100, 0)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="prompts"):
        evaluate_shift(MODEL, READOUT, BASE, OPTIMUM.gamma, "n", [5], 1, 0)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="read-out"):
        evaluate_shift(MODEL, (np.zeros(5), np.zeros((6, 5))), BASE, OPTIMUM.gamma, "n", [5],
                       100, 0)
    with pytest.raises(ConfigError, match="gamma_star"):
        evaluate_shift(MODEL, READOUT, BASE, np.eye(4), "n", [5], 100, 0)  # type: ignore[arg-type]


def test_curves() -> None:
    grid = curve_values("n", [5, 20, 80], points=30)
    assert {5.0, 20.0, 80.0} <= set(grid) and all(g.is_integer() for g in grid)
    assert grid == sorted(grid) and len(set(grid)) == len(grid)
    curves = shift_curves(READOUT, BASE, OPTIMUM.gamma, "x-scale", [0.5, 4.0], points=9)  # type: ignore[arg-type]
    grid, losses = curves["model"]
    assert grid[0] == 0.5 and grid[-1] == 4.0 and len(grid) == 9
    assert losses == pytest.approx(curves["gd"][1], rel=1e-12)
    assert losses[0] == pytest.approx(gd_term_loss(OPTIMUM.gamma, N, SIGMA, 0.25 * np.eye(D),
                                                   np.eye(D)), rel=1e-10)
    assert list(shift_curves(None, BASE, OPTIMUM.gamma, "sigma", [0.0, 1.0])) == ["gd"]


def test_write_outputs(tmp_path: Path, x_scale_rows: list[dict[str, object]]) -> None:
    u, M = READOUT
    curves = shift_curves(READOUT, BASE, OPTIMUM.gamma, "x-scale", [0.5, 4.0], points=9)  # type: ignore[arg-type]
    write_shift_outputs(tmp_path / "out", "x-scale", u, M, x_scale_rows, curves=curves,
                        extra={"prompts": PROMPTS})
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == ["shift.csv", "shift.json", "shift.png"]
    data = json.loads((tmp_path / "out" / "shift.json").read_text())
    assert data["kind"] == "x-scale" and data["prompts"] == PROMPTS
    assert np.array(data["u"]).shape == (D + 1,) and np.array(data["M"]).shape == (D + 1, D)
    assert data["rows"] == x_scale_rows
    with open(tmp_path / "out" / "shift.csv") as handle:
        table = list(csv.DictReader(handle))
    assert [float(r["value"]) for r in table] == [0.5, 1.0, 2.0, 4.0]
    assert float(table[3]["exact_loss"]) == x_scale_rows[3]["exact_loss"]
    png = (tmp_path / "out" / "shift.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_write_outputs_without_readout(tmp_path: Path) -> None:
    rows = rows_for("sigma", [0.0, 1.0], prompts=300, with_readout=False)
    write_shift_outputs(tmp_path, "sigma", None, None, rows)
    data = json.loads((tmp_path / "shift.json").read_text())
    assert data["u"] is None and data["M"] is None
    assert "exact_loss" in (tmp_path / "shift.csv").read_text().splitlines()[0]
    assert (tmp_path / "shift.png").stat().st_size > 10_000
