"""Which of ``iclab theory``'s own options apply in which of its three modes, so that none
is ever dropped: given where it does not apply, it is refused with one line naming it.

The modes: ``--asymptotic`` (Lu et al., docs/theory.md section 16), a finite pool
(``--tasks`` or ``--task-pool``, section 15) and the family optimum (the rest). The task's own
options are checked by each mode (``asymptotic_mode`` refuses every one; the pool refuses those
a pool does not take)."""

from __future__ import annotations

import click
from click.core import ParameterSource

from iclab.config.sections import RunConfig
from iclab.utils.errors import ConfigError
from iclab.utils.fields import check_value, field_infos

FAMILY_ONLY = ("monte_carlo", "precision", "bayes_prompts", "layers", "preconditioned",
               "shift", "values")
"""The options only the family optimum uses (neither a pool nor --asymptotic does)."""


def given_options() -> set[str]:
    """The parameters of the running command given on the command line or by environment
    (not left at their defaults)."""
    context = click.get_current_context()
    return {name for name in context.params
            if context.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)}


def mode_of(options: dict[str, object]) -> str:
    """"asymptotic", "pool" or "family"."""
    if options.get("asymptotic"):
        return "asymptotic"
    if options.get("tasks") is not None or options.get("task_pool") is not None:
        return "pool"
    return "family"


def check_applicable(mode: str, given: set[str], seed: int) -> None:
    """ConfigError naming the first of ``given`` that ``mode`` does not use, or a seed
    outside its declared range (0 to 2**62, every mode)."""
    check_value("--seed", seed, field_infos(RunConfig)["seed"][1])
    with_what = {"asymptotic": "--asymptotic", "pool": "a task pool (--tasks, --task-pool)"}
    if mode == "family":
        return
    for name in FAMILY_ONLY:
        if name in given:
            raise ConfigError(f"--{name.replace('_', '-')} does not apply with "
                              f"{with_what[mode]}")
    if mode == "asymptotic" and "seed" in given and "simulate_d" not in given:
        raise ConfigError("--seed applies with --asymptotic only to --simulate-d")


def check_family_options(task: object, given: set[str], monte_carlo: bool,
                         bayes_prompts: int) -> None:
    """The family optimum's own options where its method for ``task`` does not use them
    (``iclab.theory.family_optimum``): --precision outside the ratio Monte Carlo of
    rotation-invariant non-Gaussian families (a closed form, a covariate law's fixed draws, a
    span fit), and --bayes-prompts other than 0 (none) outside linear Gaussian families with
    Gaussian x (the only ones with a Bayes risk here). ConfigError, one line naming it."""
    law = getattr(task, "covariate_law", None)
    moments = None if law is not None or getattr(task, "gaussian", False) or not getattr(
        task, "rotation_invariant", False) else getattr(task, "gd_moments", lambda: None)()
    ratio_monte_carlo = (law is None and not getattr(task, "gaussian", False)
                         and bool(getattr(task, "rotation_invariant", False))
                         and (monte_carlo or moments is None))
    if "precision" in given and not ratio_monte_carlo:
        raise ConfigError("--precision does not apply here: this family's optimum is not the "
                          "ratio Monte Carlo it sets the precision of (give --monte-carlo for a "
                          "non-Gaussian rotation-invariant family)")
    gaussian = bool(getattr(task, "gaussian", False)) and law is None
    if "bayes_prompts" in given and bayes_prompts != 0 and not gaussian:
        raise ConfigError("--bayes-prompts applies only to linear Gaussian families with "
                          "Gaussian x (no --x-law or correlated contexts); give 0 or leave it out")
