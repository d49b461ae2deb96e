"""``iclab theory --target weights``: the exact weight-prediction error E ||w_k - w||^2 of
optimal k-step GD from w_0 = 0 on isotropic linear Gaussian prompts, for each k of
``--steps-k`` (``iclab.studies.cot.weights_theory``, docs/theory.md section 21): the optimal
constant step size and its error (what a one-layer LSA that writes its own estimates, its
parameters shared across steps, is compared with), and the optimal steps of their own."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from iclab.config.sections import TaskConfig
from iclab.studies.cot.weights_theory import StepsOptimum, check_steps, steps_optimum
from iclab.utils.errors import ConfigError
from iclab.utils.fields import check_value, coerce, field_infos

OWN = ("target", "steps_k")
TAKEN = ("d", "n", "sigma")
"""The task options the mode reads; any other given (a family, a covariance) is refused."""


def weights_options() -> list[Callable[[Any], Any]]:
    """The options of the weight-prediction mode (added to ``iclab theory``'s)."""
    return [
        click.option("--target", type=str, default=None,
                     help="weights: the exact weight-prediction error E||w_k - w||^2 of "
                          "optimal k-step GD (isotropic linear Gaussian; docs/theory.md "
                          "section 21)."),
        click.option("--steps-k", type=str, default=None,
                     help="--target weights: the step counts k, comma-separated (1 to 16; "
                          "default 1)."),
    ]


def weights_asked(options: dict[str, Any]) -> bool:
    return options.get("target") is not None


def parse_steps(raw: str | None) -> list[int]:
    """The step counts of ``--steps-k`` ("1,2,4,8"), each checked; ConfigError otherwise."""
    if raw is None:
        return [1]
    counts: list[int] = []
    for part in raw.split(","):
        try:
            counts.append(check_steps(int(part.strip())))
        except ValueError:
            raise ConfigError(f"--steps-k takes step counts from 1 to 16, comma-separated, "
                              f"got {raw!r}") from None
    return counts


def weights_mode(options: dict[str, Any], seed: int, as_json: bool) -> bool:
    """``iclab theory --target weights``: print the optima (True); False without --target."""
    target = options.pop("target", None)
    raw_steps = options.pop("steps_k", None)
    if target is None:
        if raw_steps is not None:
            raise ConfigError("--steps-k applies only with --target weights")
        return False
    if target != "weights":
        raise ConfigError(f"--target must be weights, got {target!r}")
    given = {key: value for key, value in options.items() if value is not None}
    extra = [key for key in given if key not in TAKEN
             and not (key == "family" and value_is_default(given[key]))]
    if extra:
        raise ConfigError(f"--{extra[0].replace('_', '-')} does not apply with --target "
                          f"weights (isotropic linear Gaussian prompts)")
    infos = field_infos(TaskConfig)
    for name in ("d", "n"):
        if name not in given:
            raise ConfigError(f"--{name} is required")
    for name in TAKEN:
        if name in given:
            check_value(name, coerce(given[name], infos[name][1]), infos[name][1])
    d, n, sigma = int(given["d"]), int(given["n"]), float(given.get("sigma", 0.0))
    optima = [steps_optimum(k, n, d, sigma) for k in parse_steps(raw_steps)]
    record = {"target": "weights", "d": d, "n": n, "sigma": sigma,
              "steps": [optimum.to_json() for optimum in optima]}
    click.echo(json.dumps(record, allow_nan=False) if as_json else _table(optima, d, n, sigma))
    return True


def value_is_default(family: Any) -> bool:
    return bool(family == TaskConfig.family)


def _table(optima: list[StepsOptimum], d: int, n: int, sigma: float) -> str:
    lines = [f"weight prediction, d = {d}, n = {n}, sigma = {sigma:g}: E||w_k - w||^2 of "
             f"k-step GD from w_0 = 0 (E||w||^2 = {d})",
             f"{'k':>3}  {'eta* (constant)':>16}  {'error':>10}  {'error, own steps':>16}  "
             f"own steps"]
    for o in optima:
        steps = "complex" if o.etas is None else ", ".join(f"{eta:.5f}" for eta in o.etas)
        lines.append(f"{o.k:>3}  {o.eta:>16.6f}  {o.error:>10.6f}  {o.error_per_step:>16.6f}  "
                     f"{steps}")
    return "\n".join(lines)
