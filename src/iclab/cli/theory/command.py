"""``iclab theory``: the optimal one-layer LSA of a task family, without training anything."""

from __future__ import annotations

import json
import math
from typing import Any

import click

from iclab.cli.options import apply_options, declared_options, flag_name
from iclab.cli.theory.applicable import (
    check_applicable,
    check_family_options,
    given_options,
    mode_of,
)
from iclab.cli.theory.asymptotic import asymptotic_mode, asymptotic_options
from iclab.cli.theory.pool import pool_theory
from iclab.cli.theory.shift import format_shift_rows, shift_rows_json
from iclab.config.sections import RunConfig, TaskConfig
from iclab.config.train import TrainConfig
from iclab.experiments.registries import Registries
from iclab.tasks.base import TaskFamily
from iclab.tasks.covariance import load_covariance
from iclab.tasks.registry import FamilyRegistry
from iclab.tasks.shifted import SHIFT_KINDS, check_kind, parse_values
from iclab.theory.bayes import check_bayes_prompts
from iclab.theory.depth.multistep import EXACT, MAX_LAYERS, MultiStepOptimum, multistep_optimum
from iclab.theory.family_optimum import FamilyOptimum, family_optimum
from iclab.theory.rotation_invariant import DEFAULT_PRECISION
from iclab.theory.shifted_optimum import shift_base, shifted_optimum_rows
from iclab.utils.errors import ConfigError
from iclab.utils.fields import check_value, coerce, field_infos, validate

MATRICES = ("cov_x", "cov_w", "context_covariance")
"""The task's matrix options, read from .npy files: (d, d), (d, d) and (n+1, n+1)."""
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


def task_of(given: dict[str, Any], families: FamilyRegistry) -> tuple[TaskConfig, TaskFamily]:
    """The task's declared fields (those given; the rest at their declared defaults) and the
    family they make, built once. d, n, sigma and relu_width are checked against their declared
    bounds (those of iclab train) and the family's name and files' applicability before any
    .npy file is read; the family checks its own parameters (x_law, context_correlation)."""
    infos = field_infos(TaskConfig)
    for name in ("d", "n"):
        if name not in given:
            raise ConfigError(f"{flag_name(name)} is required")
    for name in ("d", "n", "sigma", "relu_width"):
        if name in given:
            check_value(name, given[name], infos[name][1])
    family = given.get("family", TaskConfig.family)
    families.check_name(family)
    files = [key for key in MATRICES if key in given]
    if files and family != "linear-gaussian":
        verb = "applies" if len(files) == 1 else "apply"
        raise ConfigError(f"{'/'.join(flag_name(key) for key in files)} {verb} only to "
                          f"--family linear-gaussian, not {family!r}")
    sizes = {"cov_x": given["d"], "cov_w": given["d"], "context_covariance": given["n"] + 1}
    fields = {**given, **{key: load_covariance(given[key], sizes[key]).tolist()
                          for key in files}}
    config = TaskConfig(**{key: coerce(value, infos[key][1]) for key, value in fields.items()})
    task = TrainConfig(task=config).make_task(families)
    validate(config)
    return config, task


def _check_numbers(values: dict[str, Any]) -> None:
    """The options that are not the task's: ConfigError naming the first bad one."""
    check_value("seed", values["seed"], field_infos(RunConfig)["seed"][1])
    layers, bayes_prompts, precision = values["layers"], values["bayes_prompts"], \
        values["precision"]
    if layers is not None and not 1 <= layers <= MAX_LAYERS:
        raise ConfigError(f"--layers must be an integer from 1 to {MAX_LAYERS}, got {layers}")
    if values["preconditioned"] and layers is None:
        raise ConfigError("--preconditioned needs --layers")
    if bayes_prompts != 0 and bayes_prompts < 2:
        raise ConfigError(f"--bayes-prompts must be 0 (no Bayes risk) or an integer >= 2, got "
                          f"{bayes_prompts}")
    if not (math.isfinite(precision) and MIN_PRECISION <= precision <= MAX_PRECISION):
        raise ConfigError(f"--precision must be a number from {MIN_PRECISION:g} to "
                          f"{MAX_PRECISION:g}, got {precision}")
    if (values["shift"] is None) != (values["values"] is None):
        raise ConfigError("--shift and --values go together: --shift KIND --values V1,V2,...")


def theory_command(
    registries: Registries, monte_carlo: bool, precision: float, bayes_prompts: int,
    layers: int | None, preconditioned: bool, seed: int, shift: str | None,
    values: str | None, as_json: bool,
    **task_options: Any,
) -> None:
    """The optimal one-layer LSA for a task family: Gamma*, eta*, its loss and the Bayes risk.

    JSON keys: gamma (d x d), eta (null where Gamma* is not a multiple of I), loss,
    bayes_loss (null where not defined), method ("closed-form" or "monte-carlo"), stderr
    (standard errors of the Monte Carlo values, null for closed forms), n_eff (correlated
    contexts: the number of independent examples worth as much; null otherwise), and the
    inputs. With --shift KIND --values V1,...: also shift (the kind) and rows, one per value:
    value, lsa_loss (the exact loss of this optimal LSA under the shifted test law),
    bayes_loss, bayes_loss_stderr (the Bayes risk of the test law) and ratio.
    """
    check_applicable(mode_of(task_options), given_options(), seed)  # none dropped, seed in range
    if asymptotic_mode(task_options, seed, as_json):  # --asymptotic: docs/theory.md section 16
        return
    _check_numbers({"seed": seed, "layers": layers, "preconditioned": preconditioned,
                    "bayes_prompts": bayes_prompts, "precision": precision, "shift": shift,
                    "values": values})
    if task_options.get("task_pool") is not None or task_options.get("tasks") is not None:
        return pool_theory(task_options, seed, as_json)  # a finite pool: docs/theory.md s. 15
    shift_values = None if shift is None else parse_values(check_kind(shift), str(values))
    given = {key: value for key, value in task_options.items() if value is not None}
    config, task = task_of(given, registries.families)
    check_family_options(task, given_options(), monte_carlo, bayes_prompts)  # none dropped
    d, n, sigma = config.d, config.n, config.sigma
    if shift is not None:
        shift_base(task)  # a linear Gaussian law, before any work
    if task.gaussian and bayes_prompts > 0:
        check_bayes_prompts(d, n, sigma, bayes_prompts, "--bayes-prompts")
    rows = None if shift_values is None else shifted_optimum_rows(
        task, str(shift), shift_values, bayes_prompts, seed)
    optimum = family_optimum(task, monte_carlo=monte_carlo, precision=precision, seed=seed,
                             bayes=bayes_prompts > 0, bayes_prompts=bayes_prompts)
    steps = None if layers is None else multistep_optimum(
        task, layers, seed=seed, monte_carlo=monte_carlo, preconditioned=preconditioned)
    if not as_json:
        click.echo(format_optimum(config.family, task, optimum))
        if steps is not None:
            click.echo(format_steps(steps))
        if rows is not None:
            click.echo(format_shift_rows(str(shift), rows))
        return
    record: dict[str, Any] = {"family": config.family, "d": d, "n": n, "sigma": sigma}
    if config.family == "two-layer-relu":
        record["width"] = getattr(task, "width", None)
    if config.cov_x is not None or config.cov_w is not None:
        record["cov_x"], record["cov_w"] = config.cov_x, config.cov_w
    record.update({key: given[key] for key in ("x_law", "context_correlation") if key in given})
    if config.context_covariance is not None:
        record["context_covariance"] = config.context_covariance
    record.update(optimum.to_json())
    if steps is not None:
        record.update(steps.to_json())
    if rows is not None:
        record.update(shift_rows_json(str(shift), rows))
    click.echo(json.dumps(record, allow_nan=False))


def make_theory_command() -> click.Command:
    """The ``theory`` command: the task's options generated from its declared fields
    (``iclab.config.train.TaskConfig``, as ``iclab train``), then the theory's own."""
    options = [
        *declared_options([(TaskConfig, "")]),
        click.option("--monte-carlo", is_flag=True,
                     help="Estimate by Monte Carlo even where a closed form exists."),
        click.option("--precision", type=float, default=DEFAULT_PRECISION, show_default=True,
                     help="Monte Carlo: stop once stderr(eta) <= PRECISION * eta (1e-6 to "
                          "0.5)."),
        click.option("--bayes-prompts", type=int, default=20_000, show_default=True,
                     help="Prompts for the Monte Carlo Bayes risk (linear Gaussian families; 0 "
                          "skips it; exactly 0 when sigma = 0 and n >= d)."),
        click.option("--layers", type=int, default=None,
                     help="Also the optimal L-step gradient descent (steps, loss, Krylov "
                          f"bound), L from 1 to {MAX_LAYERS}."),
        click.option("--preconditioned", is_flag=True,
                     help="With --layers: also search the best preconditioned L-step GD "
                          "(Monte Carlo; tens of seconds to minutes)."),
        click.option("--seed", type=int, default=0, show_default=True,
                     help="Seed of the Monte Carlo estimates (0 to 2**62)."),
        click.option("--shift", type=str, default=None,
                     help="Also this optimal LSA under shifted test laws: "
                          f"{', '.join(SHIFT_KINDS)} (as iclab shift; linear Gaussian "
                          "families)."),
        click.option("--values", type=str, default=None,
                     help="With --shift: the shifted values, comma-separated (\"1,2,4\")."),
        click.option("--json", "as_json", is_flag=True, help="Print one JSON object."),
        *asymptotic_options(),
    ]
    command = click.command("theory")(apply_options(click.pass_obj(theory_command), options))
    for param in command.params:  # --d, --n: required by task_of (not by --asymptotic)
        param.required = False
    return command
