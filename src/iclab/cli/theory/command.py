"""``iclab theory``: the optimal one-layer LSA of a task family, without training anything."""

from __future__ import annotations

import json
import math
from typing import Any

import click

from iclab.cli.options import apply_options, declared_options, flag_name
from iclab.cli.run_options import run_sections
from iclab.cli.theory.applicable import (
    check_applicable,
    check_family_options,
    given_options,
    option_names,
    refusing_an_unused_seed,
)
from iclab.config.sections import RunConfig, TaskConfig
from iclab.config.task_section import option_values, task_section
from iclab.experiments.registries import Registries
from iclab.tasks.base import TaskFamily
from iclab.tasks.registry import FamilyRegistry
from iclab.theory.bayes import check_bayes_prompts
from iclab.theory.depth.multistep import EXACT, MAX_LAYERS, MultiStepOptimum, multistep_optimum
from iclab.theory.family_optimum import FamilyOptimum, family_optimum
from iclab.theory.rotation_invariant import DEFAULT_PRECISION
from iclab.utils.errors import ConfigError
from iclab.utils.fields import FieldInfo, check_value, coerce, field_infos, validate

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
    law = task.covariate_law
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


def task_of(given: dict[str, Any], families: FamilyRegistry,
            seed: int = 0) -> tuple[TaskConfig, TaskFamily]:
    """The task section of the given options (the rest at their declared defaults) and the
    family it makes, built once. Every scalar option is checked against its declaration (those
    of iclab train) and its owner (an option of another family is refused with one line naming
    it) before any .npy file is read; the family checks its own options when built."""
    for name in ("d", "n"):
        if name not in given:
            raise ConfigError(f"{flag_name(name)} is required")
    family = given.get("family", TaskConfig.family)
    families.check_name(family)
    task_class = task_section(families, family)
    infos = {name: info for name, (_, info) in field_infos(task_class).items()}
    for name in given:
        if name not in infos:
            takers = families.takers(name)
            where = f"family {' or '.join(takers)}" if takers else "no family"
            raise ConfigError(f"{flag_name(name)} applies only to {where}, not {family!r}")
    scalars = {key: coerce(value, infos[key]) for key, value in given.items()
               if infos[key].kind != "matrix"}
    for key, value in scalars.items():
        check_value(key, value, infos[key])
    matrices = {key: _loaded(infos[key], path, scalars["d"], scalars["n"])
                for key, path in given.items() if infos[key].kind == "matrix"}
    config = task_class(**scalars, **matrices)
    validate(config)
    task = families.build(family, config.d, config.n, float(config.sigma),
                          option_values(config), seed)
    return config, task


def _loaded(info: FieldInfo, path: str, d: int, n: int) -> Any:
    if info.load is None:
        raise ConfigError(f"{path}: this matrix option declares no loader")
    return info.load(path, d, n).tolist()


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


def theory_command(
    registries: Registries, monte_carlo: bool, precision: float, bayes_prompts: int,
    layers: int | None, preconditioned: bool, seed: int, as_json: bool,
    **task_options: Any,
) -> None:
    """The optimal one-layer LSA for a task family: Gamma*, eta*, its loss and the Bayes risk.

    JSON keys: gamma (d x d), eta (null where Gamma* is not a multiple of I), loss,
    bayes_loss (null where not defined), method ("closed-form" or "monte-carlo"), stderr
    (standard errors of the Monte Carlo values, null for closed forms), n_eff (correlated
    contexts: the number of independent examples worth as much; null otherwise), and the
    inputs; and the keys of the studies' additions (``registries.theory_additions``; with the
    shift study's --shift KIND --values V1,...: shift (the kind) and rows, one per value:
    value, lsa_loss (the exact loss of this optimal LSA under the shifted test law),
    bayes_loss, bayes_loss_stderr (the Bayes risk of the test law) and ratio).
    """
    active = [mode.name for mode in registries.theory_modes if mode.active(task_options)]
    given = given_options()
    check_applicable(active[0] if active else None, given, seed,
                     registries.theory_additions)  # none dropped, the seed in its range
    refusing_an_unused_seed(seed, given, lambda: _theory(
        registries, monte_carlo, precision, bayes_prompts, layers, preconditioned, seed,
        as_json, **task_options))


def _theory(
    registries: Registries, monte_carlo: bool, precision: float, bayes_prompts: int,
    layers: int | None, preconditioned: bool, seed: int, as_json: bool,
    **task_options: Any,
) -> None:
    """The work of ``theory_command`` once its options are checked."""
    for mode in registries.theory_modes:  # a study's mode (--asymptotic, a task pool)
        if mode.run(task_options, seed, as_json):
            return
    _check_numbers({"seed": seed, "layers": layers, "preconditioned": preconditioned,
                    "bayes_prompts": bayes_prompts, "precision": precision})
    requests = [(addition, addition.take(task_options))
                for addition in registries.theory_additions]
    requests = [(addition, request) for addition, request in requests if request is not None]
    given_task = {key: value for key, value in task_options.items() if value is not None}
    config, task = task_of(given_task, registries.families, seed)
    check_family_options(task, given_options(), monte_carlo, bayes_prompts)  # none dropped
    d, n, sigma = config.d, config.n, config.sigma
    for addition, request in requests:
        addition.check(request, task)  # before any work
    if task.gaussian and bayes_prompts > 0:
        check_bayes_prompts(d, n, sigma, bayes_prompts, "--bayes-prompts")
    added = [addition.run(request, task, bayes_prompts, seed) for addition, request in requests]
    optimum = family_optimum(task, monte_carlo=monte_carlo, precision=precision, seed=seed,
                             bayes=bayes_prompts > 0, bayes_prompts=bayes_prompts)
    steps = None if layers is None else multistep_optimum(
        task, layers, seed=seed, monte_carlo=monte_carlo, preconditioned=preconditioned)
    if not as_json:
        click.echo(format_optimum(config.family, task, optimum))
        if steps is not None:
            click.echo(format_steps(steps))
        for text, _ in added:
            click.echo(text)
        return
    record: dict[str, Any] = {"family": config.family, "d": d, "n": n, "sigma": sigma}
    record.update({key: value for key, value in option_values(config).items()
                   if key in given_task})  # the family's options as given
    record.update(optimum.to_json())
    if steps is not None:
        record.update(steps.to_json())
    for _, keys in added:
        record.update(keys)
    click.echo(json.dumps(record, allow_nan=False))


def make_theory_command(registries: Registries, family: str | None = None) -> click.Command:
    """The ``theory`` command: the task's options generated from its declared fields
    (``iclab.config.train.TaskConfig``, as ``iclab train``), then the theory's own, then
    those of the studies' modes (``registries.theory_modes``)."""
    visible, hidden = run_sections(registries, "", family, fixed=False)
    studies = [*(option for mode in registries.theory_modes for option in mode.options()),
               *(option for addition in registries.theory_additions
                 for option in addition.options())]
    shared = set(option_names(studies))  # a family's option a study's mode also takes
    task = [option for option in (*declared_options(visible),
                                  *declared_options(hidden, hidden=True, skip=visible))
            if not shared & set(option_names([option]))]
    options = [
        *task,
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
        click.option("--json", "as_json", is_flag=True, help="Print one JSON object."),
        *studies,
    ]
    command = click.command("theory")(apply_options(click.pass_obj(theory_command), options))
    for param in command.params:  # --d, --n: required by task_of (not by --asymptotic)
        param.required = False
    return command
