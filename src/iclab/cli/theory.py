"""``iclab theory``: the optimal one-layer LSA of a task family, without training anything."""

from __future__ import annotations

import json
import math
from typing import Any

import click
import numpy as np

from iclab.config.train import RunConfig, TaskConfig
from iclab.errors import ConfigError
from iclab.experiments.registries import Registries
from iclab.fields import check_value, field_infos
from iclab.tasks.base import TaskFamily
from iclab.tasks.covariance import load_covariance
from iclab.theory.bayes import check_bayes_prompts
from iclab.theory.family_optimum import FamilyOptimum, family_optimum
from iclab.theory.multistep import EXACT, MAX_LAYERS, MultiStepOptimum, multistep_optimum
from iclab.theory.rotation_invariant import DEFAULT_PRECISION

LAW_HELP = ("Law of the covariates, x = Sigma_x^(1/2) z: gaussian, uniform, rademacher, laplace, "
            "student-t:NU (NU > 4) or MODULE:FUNCTION (linear-gaussian only) [default: gaussian].")
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


def format_optimum(family: str, task: TaskFamily, optimum: FamilyOptimum) -> str:
    """A readable table of the optimum, Gamma* below it."""
    bayes = "-" if optimum.bayes_loss is None else (
        f"{optimum.bayes_loss:.6g} ± {optimum.bayes_loss_stderr or 0.0:.2g}")
    law = getattr(task, "covariate_law", None)
    rows = [("family", family), ("d, n, sigma", f"{task.d}, {task.n}, {task.sigma:g}")]
    if law is not None:
        rows.append(("x law", law.spec))
    rows += [
        ("method", optimum.method),
        ("eta* (step size)", _with_stderr(optimum.eta, optimum.stderr, "eta")
         if optimum.eta is not None else "- (Gamma* is not a multiple of I)"),
        ("optimal LSA loss", _with_stderr(optimum.loss, optimum.stderr, "loss")),
        ("Bayes risk", bayes),
    ]
    if optimum.n_eff is not None:
        rows.append(("n_eff (independent examples worth as much)", f"{optimum.n_eff:.6g}"))
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  {value}" for name, value in rows]
    lines.append("Gamma* =")
    lines.extend("  " + "  ".join(_entry(entry) for entry in row) for row in optimum.gamma)
    return "\n".join(lines)


def format_steps(steps: MultiStepOptimum) -> str:
    """The optimal L-step GD in a few lines."""
    stderr = "" if steps.method == EXACT else f" ± {steps.loss_stderr:.2g}"
    return "\n".join([
        f"optimal {steps.layers}-step GD ({steps.method}): steps "
        + ", ".join(f"{eta:.6g}" for eta in steps.etas),
        f"  its loss {steps.loss:.6g}{stderr}; Krylov bound (best degree-{steps.layers - 1} "
        f"polynomial) {steps.krylov_loss:.6g}" + (" (attained)" if steps.krylov_attained
                                                  else ""),
    ])


def _files_apply(family: str, files: dict[str, str | None]) -> None:
    given = [name for name, path in files.items() if path is not None]
    if given and family != "linear-gaussian":
        verb = "applies" if len(given) == 1 else "apply"
        raise ConfigError(f"{'/'.join(given)} {verb} only to --family linear-gaussian, not "
                          f"{family!r}")


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
@click.option("--x-law", type=str, default=None, help=LAW_HELP)
@click.option("--context-correlation", type=float, default=None,
              help="AR(1) correlation rho in (-1, 1) between a prompt's positions, the query "
                   "last (linear-gaussian, gaussian x law).")
@click.option("--context-covariance", type=click.Path(dir_okay=False),
              help="Covariance R of a prompt's positions as an (n+1, n+1) .npy file, the query "
                   "last (linear-gaussian, gaussian x law).")
@click.option("--monte-carlo", is_flag=True,
              help="Estimate by Monte Carlo even where a closed form exists.")
@click.option("--precision", type=float, default=DEFAULT_PRECISION, show_default=True,
              help="Monte Carlo: stop once stderr(eta) <= PRECISION * eta (1e-6 to 0.5).")
@click.option("--bayes-prompts", type=int, default=20_000, show_default=True,
              help="Prompts for the Monte Carlo Bayes risk (linear Gaussian families; 0 skips "
                   "it; exactly 0 when sigma = 0 and n >= d).")
@click.option("--layers", type=int, default=None,
              help="Also the optimal L-step gradient descent (steps, loss, Krylov bound), "
                   f"L from 1 to {MAX_LAYERS}.")
@click.option("--preconditioned", is_flag=True,
              help="With --layers: also search the best preconditioned L-step GD (Monte "
                   "Carlo; tens of seconds to minutes).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the Monte Carlo estimates (0 to 2**62).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_obj
def theory_command(
    registries: Registries, d: int, n: int, sigma: float, cov_x: str | None,
    cov_w: str | None, family: str, width: int | None, x_law: str | None,
    context_correlation: float | None,
    context_covariance: str | None, monte_carlo: bool, precision: float, bayes_prompts: int,
    layers: int | None, preconditioned: bool, seed: int, as_json: bool,
) -> None:
    """The optimal one-layer LSA for a task family: Gamma*, eta*, its loss and the Bayes risk.

    JSON keys: gamma (d x d), eta (null where Gamma* is not a multiple of I), loss,
    bayes_loss (null where not defined), method ("closed-form" or "monte-carlo"), stderr
    (standard errors of the Monte Carlo values, null for closed forms), n_eff (correlated
    contexts: the number of independent examples worth as much; null otherwise), and the
    inputs.
    """
    task_fields, run_fields = field_infos(TaskConfig), field_infos(RunConfig)
    for name, value in (("d", d), ("n", n), ("sigma", sigma), ("width", width)):
        check_value(name, value, task_fields[name][1])  # the bounds iclab train has
    check_value("seed", seed, run_fields["seed"][1])
    if layers is not None and not 1 <= layers <= MAX_LAYERS:
        raise ConfigError(f"--layers must be an integer from 1 to {MAX_LAYERS}, got {layers}")
    if preconditioned and layers is None:
        raise ConfigError("--preconditioned needs --layers")
    if bayes_prompts != 0 and bayes_prompts < 2:
        raise ConfigError(f"--bayes-prompts must be 0 (no Bayes risk) or an integer >= 2, got "
                          f"{bayes_prompts}")
    if not (math.isfinite(precision) and MIN_PRECISION <= precision <= MAX_PRECISION):
        raise ConfigError(f"--precision must be a number from {MIN_PRECISION:g} to "
                          f"{MAX_PRECISION:g}, got {precision}")
    families = registries.families
    law = None if x_law == "gaussian" else x_law  # the default, as in iclab train
    scalars: dict[str, Any] = {"x_law": law, "context_correlation": context_correlation}
    families.make_family(family, d, n, sigma, width, **scalars)  # every scalar before any file
    _files_apply(family, {"--cov-x": cov_x, "--cov-w": cov_w,
                          "--context-covariance": context_covariance})
    sigma_x = None if cov_x is None else load_covariance(cov_x, d)
    sigma_w = None if cov_w is None else load_covariance(cov_w, d)
    positions = None if context_covariance is None else load_covariance(context_covariance,
                                                                         n + 1)
    task = families.make_family(family, d, n, sigma, width, sigma_x, sigma_w, **scalars,
                                context_covariance=positions)
    if task.gaussian and bayes_prompts > 0:
        check_bayes_prompts(d, n, sigma, bayes_prompts, "--bayes-prompts")
    optimum = family_optimum(task, monte_carlo=monte_carlo, precision=precision, seed=seed,
                             bayes=bayes_prompts > 0, bayes_prompts=bayes_prompts)
    steps = None if layers is None else multistep_optimum(
        task, layers, seed=seed, monte_carlo=monte_carlo, preconditioned=preconditioned)
    if not as_json:
        click.echo(format_optimum(family, task, optimum))
        if steps is not None:
            click.echo(format_steps(steps))
        return
    record: dict[str, Any] = {"family": family, "d": d, "n": n, "sigma": sigma}
    if family == "two-layer-relu":
        record["width"] = getattr(task, "width", None)
    if sigma_x is not None or sigma_w is not None:
        record["cov_x"] = None if sigma_x is None else np.asarray(sigma_x).tolist()
        record["cov_w"] = None if sigma_w is None else np.asarray(sigma_w).tolist()
    record.update({key: value for key, value in scalars.items() if value is not None})
    if positions is not None:
        record["context_covariance"] = positions.tolist()
    record.update(optimum.to_json())
    if steps is not None:
        record.update(steps.to_json())
    click.echo(json.dumps(record, allow_nan=False))
