"""``iclab theory``: the optimal one-layer LSA of a task family, without training anything."""

from __future__ import annotations

import json
import math
from typing import Any

import click
import numpy as np

from iclab.config.fields import check_value, field_infos
from iclab.config.train import RunConfig, TaskConfig
from iclab.errors import ConfigError
from iclab.tasks.covariance import load_covariance
from iclab.tasks.registry import Family, make_family
from iclab.theory.bayes import check_bayes_prompts
from iclab.theory.family_optimum import FamilyOptimum, family_optimum
from iclab.theory.rotation_invariant import DEFAULT_PRECISION

MIN_PRECISION, MAX_PRECISION = 1e-6, 0.5


def _entry(value: float) -> str:
    """A Gamma* entry: 6 decimals, or 2 significant digits where those would show 0."""
    return f"{value: .6f}" if value == 0 or abs(value) >= 5e-7 else f"{value: .1e}"


def _with_stderr(value: float | None, stderr: dict[str, Any] | None, key: str) -> str:
    if value is None:
        return "-"
    if stderr is None or key not in stderr:
        return f"{value:.6g}"
    return f"{value:.6g} ± {stderr[key]:.2g}"


def format_optimum(family: str, task: Family, optimum: FamilyOptimum) -> str:
    """A readable table of the optimum, Gamma* below it."""
    bayes = "-" if optimum.bayes_loss is None else (
        f"{optimum.bayes_loss:.6g} ± {optimum.bayes_loss_stderr or 0.0:.2g}")
    rows = [
        ("family", family),
        ("d, n, sigma", f"{task.d}, {task.n}, {task.sigma:g}"),
        ("method", optimum.method),
        ("eta* (step size)", _with_stderr(optimum.eta, optimum.stderr, "eta")
         if optimum.eta is not None else "- (Gamma* is not a multiple of I)"),
        ("optimal LSA loss", _with_stderr(optimum.loss, optimum.stderr, "loss")),
        ("Bayes risk", bayes),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  {value}" for name, value in rows]
    lines.append("Gamma* =")
    lines.extend("  " + "  ".join(_entry(entry) for entry in row) for row in optimum.gamma)
    return "\n".join(lines)


@click.command("theory")
@click.option("--d", "d", type=int, required=True, help="Input dimension d >= 1.")
@click.option("--n", "n", type=int, required=True, help="Examples per prompt n >= 1.")
@click.option("--sigma", type=float, required=True, help="Label noise sigma >= 0.")
@click.option("--cov-x", type=click.Path(dir_okay=False),
              help="Sigma_x as a (d, d) .npy file (linear-gaussian only).")
@click.option("--cov-w", type=click.Path(dir_okay=False),
              help="Sigma_w as a (d, d) .npy file (linear-gaussian only).")
@click.option("--family", type=str, default="linear-gaussian", show_default=True,
              help="linear-gaussian, relu, two-layer-relu, anisotropic or MODULE:FUNCTION.")
@click.option("--width", type=int, default=None,
              help="Hidden width m of two-layer-relu [default: 8].")
@click.option("--monte-carlo", is_flag=True,
              help="Estimate by Monte Carlo even where a closed form exists.")
@click.option("--precision", type=float, default=DEFAULT_PRECISION, show_default=True,
              help="Monte Carlo: stop once stderr(eta) <= PRECISION * eta (1e-6 to 0.5).")
@click.option("--bayes-prompts", type=int, default=20_000, show_default=True,
              help="Prompts for the Monte Carlo Bayes risk (linear Gaussian families; 0 skips "
                   "it; exactly 0 when sigma = 0 and n >= d).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the Monte Carlo estimates (0 to 2**62).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def theory_command(
    d: int, n: int, sigma: float, cov_x: str | None, cov_w: str | None, family: str,
    width: int | None, monte_carlo: bool, precision: float, bayes_prompts: int, seed: int,
    as_json: bool,
) -> None:
    """The optimal one-layer LSA for a task family: Gamma*, eta*, its loss and the Bayes risk.

    JSON keys: gamma (d x d), eta (null where Gamma* is not a multiple of I), loss,
    bayes_loss (null where not defined), method ("closed-form" or "monte-carlo"), stderr
    (standard errors of the Monte Carlo values, null for closed forms), and the inputs.
    """
    task_fields, run_fields = field_infos(TaskConfig), field_infos(RunConfig)
    for name, value in (("d", d), ("n", n), ("sigma", sigma), ("width", width)):
        check_value(name, value, task_fields[name][1])  # the bounds iclab train has
    check_value("seed", seed, run_fields["seed"][1])
    if bayes_prompts != 0 and bayes_prompts < 2:
        raise ConfigError(f"--bayes-prompts must be 0 (no Bayes risk) or an integer >= 2, got "
                          f"{bayes_prompts}")
    if not (math.isfinite(precision) and MIN_PRECISION <= precision <= MAX_PRECISION):
        raise ConfigError(f"--precision must be a number from {MIN_PRECISION:g} to "
                          f"{MAX_PRECISION:g}, got {precision}")
    make_family(family, d, n, sigma, width)  # the family name and width before any file
    if (cov_x is not None or cov_w is not None) and family != "linear-gaussian":
        raise ConfigError(f"--cov-x/--cov-w apply only to --family linear-gaussian, not {family!r}")
    sigma_x = None if cov_x is None else load_covariance(cov_x, d)
    sigma_w = None if cov_w is None else load_covariance(cov_w, d)
    task = make_family(family, d, n, sigma, width, sigma_x, sigma_w)
    if task.gaussian and bayes_prompts > 0:
        check_bayes_prompts(d, n, sigma, bayes_prompts, "--bayes-prompts")
    optimum = family_optimum(task, monte_carlo=monte_carlo, precision=precision, seed=seed,
                             bayes=bayes_prompts > 0, bayes_prompts=bayes_prompts)
    if not as_json:
        click.echo(format_optimum(family, task, optimum))
        return
    record: dict[str, Any] = {"family": family, "d": d, "n": n, "sigma": sigma}
    if family == "two-layer-relu":
        record["width"] = getattr(task, "width", None)
    if sigma_x is not None or sigma_w is not None:
        record["cov_x"] = None if sigma_x is None else np.asarray(sigma_x).tolist()
        record["cov_w"] = None if sigma_w is None else np.asarray(sigma_w).tolist()
    record.update(optimum.to_json())
    click.echo(json.dumps(record))
