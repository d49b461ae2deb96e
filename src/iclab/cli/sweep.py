"""``iclab sweep SPEC --out DIR``: run a spec's sweep, then its claims and report if it has any."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import click

from iclab.experiments.claims.kind import Claim, ClaimsNotHeldError
from iclab.experiments.claims.probe import probe_claim_kinds
from iclab.experiments.executors.slurm_executor import CLUSTERS, SLURM_OPTIONS
from iclab.experiments.registries import Registries
from iclab.experiments.specs.builtin import load_spec
from iclab.experiments.specs.spec import Spec
from iclab.experiments.specs.sweep import EXECUTORS, check_sweep_dir, make_executor, run_sweep
from iclab.utils.signals import stop_signals_deferred


def executor_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--executor, --address, --workers, --threads and --quiet, shared by sweep and
    reproduce."""
    options = [
        click.option("--executor", type=click.Choice(EXECUTORS), default="local",
                     show_default=True,
                     help="local processes, Ray tasks (iclab[ray]) or SLURM jobs "
                          "(iclab[slurm]; docs/cluster.md)."),
        click.option("--address", default=None,
                     help="Ray cluster to join: host:port (the head's GCS port, 6379 by "
                          "default), auto (the cluster this machine is a node of), or "
                          "ray://host:10001 (Ray Client, from outside the cluster) "
                          "[default: start a local Ray instance and stop it afterwards]. "
                          "Results come back to this machine; see docs/cluster.md."),
        click.option("--workers", type=int, default=None,
                     help="Parallel runs [default: one per core, or per --threads cores; "
                          "with --address, as many as the cluster schedules]."),
        click.option("--threads", type=int, default=None,
                     help="Threads (torch and BLAS) per worker, or CPUs per Ray task or "
                          "SLURM job [default: the cores this process may use divided among "
                          "the workers, at least 1; Ray and SLURM: 1]. With --threads and no "
                          "--workers: one worker per THREADS cores."),
        click.option("--quiet", is_flag=True, help="No progress bar."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def ray_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--storage and --connect-timeout (Ray only), passed on to ``sweep_and_report``."""
    options = [
        click.option("--storage", default=None, metavar="URI",
                     help="With --executor ray: keep each run's latest checkpoint under URI "
                          "(s3://..., gs://..., or a folder every node sees) so a run whose "
                          "node dies resumes there instead of from the start."),
        click.option("--connect-timeout", type=float, default=None, metavar="SECONDS",
                     help="With --address: give up (exit code 2) if the cluster cannot be "
                          "reached within SECONDS [default: 30]."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def slurm_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options ``--executor slurm`` declares (``SLURM_OPTIONS``), passed on to
    ``sweep_and_report`` as its ``slurm`` mapping (None: not given)."""
    for option in reversed(SLURM_OPTIONS):
        kind = click.Choice(CLUSTERS) if option.key == "cluster" else option.kind
        command = click.option(option.flag, option.key, type=kind, default=None,
                               help=option.help)(command)
    return command


def format_claims(claims: list[Claim]) -> str:
    """One line per claim: verdict, learned value, theory, tolerance and the claim."""
    lines = []
    for claim in claims:
        verdict = "holds" if claim.holds else "FAILS"
        lines.append(f"{verdict:<6} {claim.value:>10.5g} vs {claim.theory:<10.5g} "
                     f"(tol {claim.tolerance_text})  {claim.claim}")
    return "\n".join(lines)


def sweep_and_report(load: Callable[[Registries], Spec], registries: Registries, out: str,
                     executor: str, address: str | None, workers: int | None, quiet: bool, *,
                     storage: str | None = None, connect_timeout: float | None = None,
                     threads: int | None = None, slurm: dict[str, Any] | None = None) -> None:
    """Run the spec ``load`` reads with the command's ``registries`` into ``out``; with
    claims, write the report (by the same claim kinds) and raise ClaimsNotHeldError (exit
    code 1) if one does not hold. A user's claim kinds are tried on a synthetic result set
    first (``probe_claim_kinds``), so a failing one is one line before any run."""
    out_dir = check_sweep_dir(out)  # before Path(""), which is the current folder
    started = time.perf_counter()
    runner = make_executor(executor, workers, address, storage,  # bad options first
                           connect_timeout, threads, slurm)
    spec = load(registries)
    probe_claim_kinds(spec, registries.claims)  # a user's claim kinds, before any run
    measured: dict[str, float] = {}
    records = run_sweep(spec, out_dir, runner, progress=not quiet,
                        studies=tuple(registries.study_references), seconds=measured)
    click.echo(f"{len(records)} runs finished in {out_dir / 'runs'}; "
               f"results in {out_dir / 'results.csv'}")
    if not spec.claims:
        return
    with stop_signals_deferred():  # matplotlib: imported only when reporting
        from iclab.experiments.report.write import write_report

    claims = write_report(spec, records, out_dir, registries.claims, measured)
    click.echo(format_claims(claims))
    failed = sum(not claim.holds for claim in claims)
    click.echo(f"{len(claims) - failed} of {len(claims)} claims hold; report: "
               f"{out_dir / 'report.html'} ({time.perf_counter() - started:.0f} s)")
    if failed:
        raise ClaimsNotHeldError(f"{failed} of {len(claims)} claims do not hold; see "
                                 f"{out_dir / 'report.html'}")


@click.command("sweep")
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option("--out", type=click.Path(file_okay=False), required=True,
              help="Sweep folder: runs/<config hash>/, results.csv, timings.csv, report.")
@executor_options
@ray_options
@slurm_options
@click.pass_obj
def sweep_command(registries: Registries, /, spec: str, out: str, executor: str,
                  address: str | None, workers: int | None, threads: int | None, quiet: bool,
                  storage: str | None, connect_timeout: float | None, **slurm: Any) -> None:
    """Run every point of the experiment spec SPEC (.toml or .json), skipping finished runs.

    Writes OUT/runs/<config hash>/ per run, OUT/results.csv and OUT/timings.csv, and, when
    the spec declares claims, OUT/claims.json, OUT/report.md, OUT/report.html and the figures.
    A claim's kind may be a plug-in, ``kind = "my_claims.py:MyClaim"``. Killed, it resumes
    when run again. Exit code 1 if a run fails or a claim does not hold.
    """
    sweep_and_report(lambda found: load_spec(spec, found), registries, out, executor, address,
                     workers, quiet, storage=storage, connect_timeout=connect_timeout,
                     threads=threads, slurm=slurm)
