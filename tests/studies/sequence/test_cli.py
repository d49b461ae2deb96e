"""The sequence study through the CLI: iclab theory --family drifting-linear (the WPGD
optimum against an independent computation), a short GLA run that beats the one-layer LSA's
optimum on drifting prompts, and bad options (one line, exit 2, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from iclab.cli.main import main
from iclab.theory.gaussian import loss_star_isotropic

THEORY = ["theory", "--family", "drifting-linear", "--rho", "0.9", "--d", "4", "--n", "20",
          "--sigma", "0.25", "--json"]


def brute_force_optimum(d: int, n: int, sigma: float, rho: float) -> float:
    """Independent route to L*_wpgd: E[phi phi^T] and E[phi y_q] of the features
    phi_i = y_i x_q^T x_i, each moment by Isserlis' theorem written out entry by entry, and
    the best linear combination of the features."""
    second = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            if i == j:   # E[y_i^2 (x_q.x_i)^2] = E[y_i^2 |x_i|^2] = d (d + 2) + d sigma^2
                second[i, j] = d * (d + 2) + d * sigma**2
            else:        # E[y_i y_j x_i^T x_j] = E[w_i^T w_j]
                second[i, j] = d * rho ** abs(i - j)
    cross = np.array([d * rho ** (n - i) for i in range(n)])
    coef = np.linalg.lstsq(second, cross, rcond=None)[0]
    return float(d + sigma**2 - cross @ coef)


def test_theory_json_gives_the_wpgd_optimum_below_the_lsa(capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    assert main(THEORY) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["loss_star_wpgd"] == pytest.approx(brute_force_optimum(4, 20, 0.25, 0.9),
                                                     rel=1e-6)
    assert record["loss_star_wpgd"] < record["loss_star_lsa"] == record["loss"]
    assert len(record["omega_star"]) == 20 and sum(record["omega_star"]) == pytest.approx(20)
    assert record["bayes_loss"] < record["loss_star_wpgd"]


def test_theory_at_rho_one_is_the_iid_optimum(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*THEORY[:4], "1", *THEORY[5:]]
    assert main(argv) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["loss_star_wpgd"] == pytest.approx(loss_star_isotropic(20, 4, 0.25),
                                                     rel=1e-12)


def test_the_asymptotic_rho_is_still_the_noise_variance(capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    assert main(["theory", "--asymptotic", "--tau", "0.5", "--rho", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rho"] == 2.0


def test_gla_beats_the_lsa_optimum_on_drifting_prompts(tmp_path: Path) -> None:
    out = tmp_path / "gla"
    assert main(["train", "--model", "gla", "--family", "drifting-linear", "--rho", "0.9",
                 "--d", "4", "--n", "20", "--sigma", "0.25", "--seed", "0", "--steps", "300",
                 "--eval-prompts", "20000", "--quiet", "--out", str(out)]) == 0
    result = json.loads((out / "result.json").read_text())
    assert result["test_loss"] + 4 * result["test_loss_stderr"] < result["loss_star_lsa"]
    assert result["test_loss"] > result["loss_star_wpgd"] - 4 * result["test_loss_stderr"]
    assert result["omega_error"] < 0.1


@pytest.mark.parametrize(("args", "fragment"), [
    (["--family", "drifting-linear", "--rho", "-0.1"], "rho must be a finite number >= 0"),
    (["--family", "drifting-linear", "--rho", "1.5"], "rho must be a finite number >= 0"),
    (["--model", "h3", "--gate", "vector"], "--gate applies only to model gla"),
    (["--model", "gla", "--state", "3"], "--state applies only to model h3"),
    (["--model", "gla", "--gate", "diagonal"], "gate must be one of"),
    (["--rho", "0.5"], "--rho applies only to family drifting-linear"),
])
def test_bad_options_are_one_line_exit_2_and_write_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], fragment: str
) -> None:
    out = tmp_path / "run"
    assert main(["train", "--d", "3", "--n", "5", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("rho", ["0", "1"])
def test_rho_accepts_both_ends(tmp_path: Path, rho: str) -> None:
    out = tmp_path / "run"
    assert main(["train", "--model", "gla", "--family", "drifting-linear", "--rho", rho,
                 "--d", "2", "--n", "4", "--steps", "5", "--eval-prompts", "500", "--quiet",
                 "--out", str(out)]) == 0
    assert json.loads((out / "config.json").read_text())["rho"] == float(rho)


def test_h3_on_iid_prompts_writes_its_readout_beside_uniform_optimal_weights(
        tmp_path: Path) -> None:
    out = tmp_path / "h3"
    assert main(["train", "--model", "h3", "--d", "3", "--n", "6", "--sigma", "0.5",
                 "--steps", "5", "--eval-prompts", "500", "--quiet", "--out", str(out)]) == 0
    result = json.loads((out / "result.json").read_text())
    np.testing.assert_allclose(result["omega_star"], np.ones(6), rtol=1e-12)
    assert result["loss_star_wpgd"] == pytest.approx(result["loss_star"], rel=1e-12)
    assert len(result["wpgd_omega"]) == 6 and sum(result["wpgd_omega"]) == pytest.approx(6)
    assert result["wpgd_readout_loss"] >= result["loss_star_wpgd"]


def test_the_catalogue_lists_the_models_and_the_family(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    assert main(["families", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["drifting-linear"]["optimum"] == "the family's own"
    assert "rho" in rows["drifting-linear"]["parameters"]
    assert rows["linear-gaussian"]["optimum"] == "closed form"
    assert main(["models", "--json"]) == 0
    names = {row["name"] for row in json.loads(capsys.readouterr().out)}
    assert {"h3", "gla", "mamba"} <= names
