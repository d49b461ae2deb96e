"""``iclab reproduce``: the paper's claims, each with a verdict, in one report."""

from __future__ import annotations

from typing import Any

import click

from iclab.cli.sweep import executor_options, ray_options, slurm_options, sweep_and_report
from iclab.experiments.registries import Registries
from iclab.experiments.specs.builtin import builtin_spec
from iclab.experiments.specs.claim_spec import SpecRegistries
from iclab.experiments.specs.spec import Spec
from iclab.utils.errors import ConfigError


def sourced_spec(name: str, registries: SpecRegistries) -> Spec:
    """The built-in spec ``name``; ConfigError unless every claim in it has a source."""
    spec = builtin_spec(name, registries)
    missing = [f"{claim.section}/{claim.kind}/{claim.group}" for claim in spec.claims
               if not claim.source]
    if missing:
        raise ConfigError(f"{name}.toml: every claim of iclab reproduce needs a source; "
                          f"{len(missing)} have none, first {missing[0]}")
    return spec


@click.command("reproduce")
@click.option("--quick", is_flag=True,
              help="The smaller set (same claims, 3% tolerance): under 2 minutes on 2 cores.")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Output folder [default: runs/reproduce, or runs/reproduce-quick].")
@executor_options
@ray_options
@slurm_options
@click.pass_obj
def reproduce_command(registries: Registries, /, quick: bool, out: str | None, executor: str,
                      address: str | None, workers: int | None, threads: int | None,
                      quiet: bool, storage: str | None, connect_timeout: float | None,
                      **slurm: Any) -> None:
    """Train the models behind each claim of the paper and report the verdicts.

    Theorem 1 (eta_hat against sigma and n), Theorem 2 (preconditioning by Sigma_x^-1),
    Theorem 3 (nonlinear rotation-invariant targets), the anisotropic control, the test
    loss against the optimal and Bayes-optimal losses, a trained LSA under shifted test laws
    (a softmax model's shift curves beside it as measurements, not claims), deep models and
    non-Gaussian covariates. Every claim names its source. Writes OUT/report.html
    (self-contained), OUT/report.md, OUT/claims.json, OUT/results.csv, OUT/timings.csv and
    the figures. Interrupted, it resumes when run again. Exit code 0 when every claim holds, 1
    if one does not.
    """
    name = "reproduce-quick" if quick else "reproduce"
    out = f"runs/{name}" if out is None else out  # "" is refused, not the default
    sweep_and_report(lambda found: sourced_spec(name, found), registries, out, executor,
                     address, workers, quiet, storage=storage, connect_timeout=connect_timeout,
                     threads=threads, slurm=slurm)
