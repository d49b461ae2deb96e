"""Which of ``iclab theory``'s own options apply in which of its modes, so that none is ever
dropped: given where it does not apply, it is refused with one line naming it.

The modes: a study's (``TheoryMode``: the asymptotic study's ``--asymptotic``, the pool
study's ``--tasks``/``--task-pool``) and the family optimum (the rest). The one-layer
optimum's own options and the studies' additions to it (``--shift``) apply only to the family
optimum; the task's own options are checked by each mode."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable, Sequence
from typing import Any

import click
from click.core import ParameterSource

from iclab.config.sections import RunConfig
from iclab.tasks.base import TaskFamily
from iclab.utils.errors import ConfigError
from iclab.utils.fields import check_value, field_infos
from iclab.utils.seeding import recording_seeds

FAMILY_ONLY = ("monte_carlo", "precision", "bayes_prompts", "layers", "preconditioned")
"""The options only the family optimum uses (no study's mode does)."""


def given_options() -> set[str]:
    """The parameters of the running command given on the command line or by environment
    (not left at their defaults)."""
    context = click.get_current_context()
    return {name for name in context.params
            if context.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)}


def option_names(options: Sequence[Any]) -> list[str]:
    """The parameter names of click option decorators (``TheoryAddition.options()``)."""
    def target() -> None: ...

    for option in options:
        option(target)
    return [param.name for param in getattr(target, "__click_params__", []) if param.name]


def check_applicable(mode: str | None, given: set[str], seed: int,
                     additions: Sequence[Any]) -> None:
    """ConfigError naming the first of ``given`` that the study mode ``mode`` does not use
    (the family optimum's options and those of ``additions``), or a seed outside its declared
    range (0 to 2**62, every mode); ``mode`` None: the family optimum."""
    check_value("--seed", seed, field_infos(RunConfig)["seed"][1])
    if mode is None:
        return
    added = [name for addition in additions for name in option_names(addition.options())]
    for name in (*FAMILY_ONLY, *added):
        if name in given:
            raise ConfigError(f"--{name.replace('_', '-')} does not apply with the {mode} "
                              f"mode")


def check_family_options(task: TaskFamily, given: set[str], monte_carlo: bool,
                         bayes_prompts: int) -> None:
    """The family optimum's own options where its method for ``task`` does not use them
    (``iclab.theory.family_optimum``): --precision outside the ratio Monte Carlo of
    rotation-invariant non-Gaussian families (a closed form, a covariate law's fixed draws, a
    span fit), and --bayes-prompts other than 0 (none) outside linear Gaussian families with
    Gaussian x (the only ones with a Bayes risk here). ConfigError, one line naming it."""
    law = task.covariate_law
    moments = None if law is not None or task.gaussian or not task.rotation_invariant \
        else task.gd_moments()
    ratio_monte_carlo = (law is None and not task.gaussian and bool(task.rotation_invariant)
                         and (monte_carlo or moments is None))
    if "precision" in given and not ratio_monte_carlo:
        raise ConfigError("--precision does not apply here: this family's optimum is not the "
                          "ratio Monte Carlo it sets the precision of (give --monte-carlo for a "
                          "non-Gaussian rotation-invariant family)")
    gaussian = bool(task.gaussian) and law is None
    if "bayes_prompts" in given and bayes_prompts != 0 and not gaussian:
        raise ConfigError("--bayes-prompts applies only to linear Gaussian families with "
                          "Gaussian x (no --x-law or correlated contexts); give 0 or leave it out")


def refusing_an_unused_seed(seed: int, given: set[str], run: Callable[[], None]) -> None:
    """``run()`` the command; with ``--seed`` given, its output is held back and, unless some
    generator was made from that seed (every draw in iclab derives from one,
    ``iclab.utils.seeding``), the seed is refused in one line instead: the chosen method drew
    nothing (a closed form, no Bayes risk, no simulation). Such a method is fast, and the
    command writes no file, so the refusal comes after it and costs nothing."""
    if "seed" not in given:
        run()
        return
    held = io.StringIO()
    with recording_seeds() as used, contextlib.redirect_stdout(held):
        run()
    if seed not in used:
        raise ConfigError(f"--seed {seed} does not apply here: this method draws nothing (a "
                          f"closed form, no Bayes risk or simulation); leave --seed out")
    sys.stdout.write(held.getvalue())
