"""``iclab theory --asymptotic``: Lu et al.'s asymptotic e_ICL and e_IDG of the ridge-fitted
reduced linear attention (``iclab.studies.asymptotic``), with the finite-d simulation beside
them (``--simulate-d``)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import click

from iclab.cli.theory.applicable import given_options
from iclab.studies.asymptotic.errors import AsymptoticErrors, asymptotic_errors
from iclab.studies.asymptotic.simulation import SimulatedErrors, simulate
from iclab.utils.errors import ConfigError

NUMBERS = ("tau", "alpha", "kappa", "rho", "lam")
DEFAULTS: dict[str, float] = {"tau": math.nan, "alpha": 1.0, "kappa": math.inf, "rho": 0.0,
                              "lam": 0.0}
OWN = ("asymptotic", *NUMBERS, "simulate_d", "repeats")
SHARED = ("rho",)
"""This mode's options a family may declare too (one --rho on the command line: the noise
variance with --asymptotic, the family's option without it, drifting-linear's rho)."""


def asymptotic_options() -> list[Callable[[Any], Any]]:
    """The options of the asymptotic mode (added to ``iclab theory``'s)."""
    return [
        click.option("--asymptotic", is_flag=True,
                     help="Lu et al.'s asymptotic e_ICL and e_IDG of ridge-fitted linear "
                          "attention (needs --tau; see docs/theory.md section 16)."),
        click.option("--tau", type=float, default=None,
                     help="--asymptotic: prompts n = tau d^2 (1e-6 to 1e6)."),
        click.option("--alpha", type=float, default=None,
                     help="--asymptotic: context length N = alpha d (1e-6 to 1e6; default "
                          "1)."),
        click.option("--kappa", type=str, default=None,
                     help="--asymptotic: tasks k = kappa d (1e-6 to 1e6, or inf: default)."),
        click.option("--rho", type=float, default=None,
                     help="--asymptotic: label noise variance (0 to 1e6; default 0); without "
                          "--asymptotic, the family's rho (drifting-linear)."),
        click.option("--lam", type=float, default=None,
                     help="--asymptotic: ridge penalty (0 to 1e6; default 0)."),
        click.option("--simulate-d", type=int, default=None,
                     help="--asymptotic: also the ridge fit simulated at this d (2 to 200)."),
        click.option("--repeats", type=int, default=None,
                     help="--simulate-d: pretraining sets averaged (default 2)."),
    ]


def _kappa(raw: str | None) -> float:
    if raw is None:
        return math.inf
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"--kappa must be a number > 0 or inf, got {raw!r}") from None


def format_errors(errors: AsymptoticErrors, simulated: SimulatedErrors | None) -> str:
    """A few readable lines: the inputs, the asymptotic errors, the simulation."""
    kappa = "inf" if math.isinf(errors.kappa) else f"{errors.kappa:g}"
    lines = [f"tau, alpha, kappa, rho, lam  {errors.tau:g}, {errors.alpha:g}, {kappa}, "
             f"{errors.rho:g}, {errors.lam:g}",
             f"method                       {errors.method}",
             f"e_ICL (d -> inf)             {errors.e_icl:.6g}",
             f"e_IDG (d -> inf)             {errors.e_idg:.6g}"]
    if simulated is not None:
        lines += [f"simulated at d = {simulated.d} (n = {simulated.n}, k = "
                  f"{simulated.k or 'fresh'}, N = {simulated.context}, {simulated.repeats} "
                  f"pretraining sets):",
                  f"  e_ICL {simulated.e_icl:.6g} ± {simulated.e_icl_stderr:.2g}",
                  f"  e_IDG {simulated.e_idg:.6g} ± {simulated.e_idg_stderr:.2g}"]
    return "\n".join(lines)


def asymptotic_mode(options: dict[str, Any], seed: int, as_json: bool) -> bool:
    """Pop this mode's options from ``options``; with --asymptotic print the errors (and the
    simulation) and return True. ConfigError (one line) on a bad value, on the mode's options
    without --asymptotic, and on task options with it."""
    own = {key: options.pop(key, None) for key in OWN}
    if not own["asymptotic"]:
        for key in SHARED:  # left to the family's checks
            if own[key] is not None:
                options[key] = own.pop(key)
    given = [key for key in OWN[1:] if own.get(key) is not None]
    if not own["asymptotic"]:
        if given:
            raise ConfigError(f"--{given[0].replace('_', '-')} needs --asymptotic")
        return False
    task = sorted(key for key, value in options.items() if value is not None)
    if task:
        raise ConfigError(f"--asymptotic takes --tau, --alpha, --kappa, --rho, --lam, not "
                          f"--{task[0].replace('_', '-')}")
    if own["tau"] is None:
        raise ConfigError("--asymptotic needs --tau")
    if own["simulate_d"] is None and "seed" in given_options():
        raise ConfigError("--seed applies with --asymptotic only to --simulate-d")
    values: dict[str, float] = {key: float(DEFAULTS[key] if own[key] is None else own[key])
                                for key in NUMBERS if key != "kappa"}
    values["kappa"] = _kappa(own["kappa"])
    errors = asymptotic_errors(**values)
    simulated = None
    if own["simulate_d"] is not None or own["repeats"] is not None:
        if own["simulate_d"] is None:
            raise ConfigError("--repeats needs --simulate-d")
        simulated = simulate(values["tau"], values["alpha"], values["kappa"], values["rho"],
                             values["lam"], int(own["simulate_d"]), seed,
                             2 if own["repeats"] is None else int(own["repeats"]))
    if not as_json:
        click.echo(format_errors(errors, simulated))
        return True
    record = errors.to_json()
    if simulated is not None:
        record["simulation"] = {**simulated.to_json(), "seed": seed}
    click.echo(json.dumps(record, allow_nan=False))
    return True
