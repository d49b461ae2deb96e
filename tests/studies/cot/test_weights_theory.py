"""The exact weight-prediction error of k-step GD (docs/theory.md section 21) against the
one-step closed form worked by hand and an independent Monte Carlo of GD on drawn prompts;
``iclab theory --target weights`` through the CLI."""

from __future__ import annotations

import json

import pytest
import torch

from iclab.cli.main import main
from iclab.studies.cot.weights_theory import constant_step_error, steps_optimum
from tests.cli.test_bad_input import assert_refused

PROMPTS = 100_000


def gd_errors(d: int, n: int, sigma: float, etas: list[float], seed: int) -> torch.Tensor:
    """||w_k - w||^2 of GD with the steps ``etas`` on PROMPTS drawn prompts (float64)."""
    generator = torch.Generator().manual_seed(seed)
    X = torch.randn(PROMPTS, n, d, generator=generator, dtype=torch.float64)
    w = torch.randn(PROMPTS, d, generator=generator, dtype=torch.float64)
    y = torch.einsum("pnd,pd->pn", X, w) + sigma * torch.randn(
        PROMPTS, n, generator=generator, dtype=torch.float64)
    estimate = torch.zeros_like(w)
    for eta in etas:
        residual = torch.einsum("pnd,pd->pn", X, estimate) - y
        estimate = estimate - eta * torch.einsum("pnd,pn->pd", X, residual) / n
    return (estimate - w).square().sum(-1)


def mean_and_se(values: torch.Tensor) -> tuple[float, float]:
    return float(values.mean()), float(values.std() / values.numel() ** 0.5)


@pytest.mark.parametrize(("d", "n", "sigma"), [(5, 10, 0.0), (3, 7, 0.5), (6, 4, 0.0)])
def test_one_step_closed_form(d: int, n: int, sigma: float) -> None:
    # by hand: E||eta b - w||^2 = d - 2 eta d + eta^2 d (n + d + 1 + sigma^2) / n
    optimum = steps_optimum(1, n, d, sigma)
    assert optimum.eta == pytest.approx(n / (n + d + 1 + sigma**2), rel=1e-12)
    assert optimum.error == pytest.approx(d * (d + 1 + sigma**2) / (n + d + 1 + sigma**2),
                                          rel=1e-12)


@pytest.mark.parametrize(("k", "sigma"), [(2, 0.0), (4, 0.0), (4, 0.5)])
def test_constant_step_against_monte_carlo(k: int, sigma: float) -> None:
    d, n = 5, 10
    optimum = steps_optimum(k, n, d, sigma)
    mean, se = mean_and_se(gd_errors(d, n, sigma, [optimum.eta] * k, seed=k))
    assert abs(mean - optimum.error) < 4 * se, (mean, se, optimum.error)
    # the optimum is a minimum: with the same prompts, 10 % off either way is worse
    for factor in (0.9, 1.1):
        worse = gd_errors(d, n, sigma, [factor * optimum.eta] * k, seed=k)
        assert float(worse.mean()) > mean


@pytest.mark.parametrize(("eta", "sigma"), [(0.3, 0.0), (0.35, 0.5)])
def test_eight_steps_against_monte_carlo(eta: float, sigma: float) -> None:
    """k = 8 at steps where (1 - eta s)^16 stays tame over S's spectrum: at eta* = 0.419 the
    rare prompts with an eigenvalue beyond 2/eta* dominate the mean (heavy tails), and a
    plain Monte Carlo's standard error understates its error (docs/theory.md section 21)."""
    d, n, k = 5, 10, 8
    mean, se = mean_and_se(gd_errors(d, n, sigma, [eta] * k, seed=8))
    exact = constant_step_error(k, n, d, sigma, eta)
    assert abs(mean - exact) < 4 * se, (mean, se, exact)
    optimum = steps_optimum(k, n, d, sigma)
    assert optimum.error < exact
    for factor in (0.99, 1.01):  # the stationary point found is a minimum
        assert constant_step_error(k, n, d, sigma, factor * optimum.eta) > optimum.error


@pytest.mark.parametrize("k", [2, 4])
def test_own_steps_against_monte_carlo(k: int) -> None:
    d, n, sigma = 5, 10, 0.0
    optimum = steps_optimum(k, n, d, sigma)
    assert optimum.etas is not None
    mean, se = mean_and_se(gd_errors(d, n, sigma, list(optimum.etas), seed=10 + k))
    assert abs(mean - optimum.error_per_step) < 4 * se
    assert optimum.error_per_step < optimum.error - 4 * se  # own steps beat one step size


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["theory", "--target", "weights", "--d", "5", "--n", "10", "--sigma", "0",
                 "--steps-k", "1,2,4,8", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    errors = [row["error"] for row in record["steps"]]
    assert [row["k"] for row in record["steps"]] == [1, 2, 4, 8]
    assert errors[0] == pytest.approx(5 * 6 / 16, rel=1e-12)
    assert errors == sorted(errors, reverse=True)


@pytest.mark.parametrize("argv", [
    ["--steps-k", "0"], ["--steps-k", "17"], ["--steps-k", "1,x"], ["--family", "relu"],
    ["--layers", "2"], ["--cov-x", "c.npy"]])
def test_bad_input_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert_refused(["theory", "--target", "weights", "--d", "5", "--n", "10", *argv, "--json"],
                   capsys)


def test_edges_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["theory", "--target", "weights", "--d", "5", "--n", "10", "--steps-k", "16",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["steps"][0]["k"] == 16
    assert_refused(["theory", "--target", "labels", "--d", "5", "--n", "10"], capsys)
    assert_refused(["theory", "--d", "5", "--n", "10", "--steps-k", "2"], capsys)


def test_cli_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["theory", "--target", "weights", "--d", "5", "--n", "10", "--sigma", "0.5",
                 "--steps-k", "1,2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("weight prediction, d = 5, n = 10, sigma = 0.5")
    k1 = lines[2].split()
    # the one-step closed form with noise: eta* = n / (n + d + 1 + sigma^2)
    assert k1[0] == "1" and float(k1[1]) == pytest.approx(10 / 16.25, abs=1e-6)
    assert float(k1[2]) == pytest.approx(5 * 6.25 / 16.25, abs=1e-6)
