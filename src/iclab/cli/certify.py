"""``iclab certify DIR``: how far a trained run's loss is above the span bound of every LSA."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from iclab.runs.certify import certify_run
from iclab.theory.span import TEST_PROMPTS

VERDICT_Z = 3.0


def verdict(report: dict[str, Any]) -> str:
    """One sentence: at the bound (|paired z| <= 3), above it by how much, or inconclusive."""
    z = report["z_paired"]
    if z < -VERDICT_Z:
        return (f"inconclusive: the model's loss is {-z:.1f} standard errors below the estimated "
                f"bound; the bound's fit is too coarse, raise --fit-prompts")
    if z <= VERDICT_Z:
        return (f"certified: the model's loss is within {VERDICT_Z:g} standard errors of the "
                f"lower bound (paired z = {z:.2f}), so it is a global optimum of one-layer LSA "
                f"up to Monte Carlo precision")
    return (f"not optimal: the model's loss is {z:.1f} standard errors above the lower bound "
            f"(paired), {report['z']:.1f} combined")


def format_report(report: dict[str, Any]) -> str:
    """A readable table of the comparison."""
    rows = [
        ("run", report["run"]),
        ("family", report["family"]),
        ("model test loss", f"{report['test_loss']:.6f} ± {report['test_loss_stderr']:.2g}"),
        ("span bound (all LSAs)", f"{report['bound']:.6f} ± {report['bound_stderr']:.2g}"),
        ("excess (combined)", f"{report['excess']:.3g} ± {report['excess_stderr']:.2g}"
                              f"  (z = {report['z']:.2f})"),
        ("excess (paired)", f"{report['paired_excess']:.3g} ± "
                            f"{report['paired_excess_stderr']:.2g}"
                            f"  (z = {report['z_paired']:.2f})"),
        ("span optimum eta", f"{report['span']['eta']:.6f} ± {report['span']['eta_stderr']:.2g}"),
        ("span isotropy error", f"{100 * report['span']['isotropy_err']:.3f} %"),
        ("span nuisance shares", ", ".join(f"{name} {value:.1e}" for name, value
                                           in report["span"]["nuisance"].items())),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  {value}" for name, value in rows]
    return "\n".join([*lines, verdict(report)])


@click.command("certify")
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--fit-prompts", type=int, default=None,
              help="Prompts for the least-squares fit [default: 3000 per feature, "
                   "200,000 to 1,000,000].")
@click.option("--test-prompts", type=int, default=TEST_PROMPTS, show_default=True,
              help="Fresh prompts for the bound's loss and the paired comparison.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def certify_command(
    run_dir: str, fit_prompts: int | None, test_prompts: int, seed: int, as_json: bool
) -> None:
    """Compare the finished run in RUN_DIR with the span optimum, a lower bound on every LSA.

    Prints the model's test loss, the bound, and how many standard errors the model is above
    it (combined from the two independent estimates, and paired on shared prompts).
    """
    report = certify_run(Path(run_dir), fit_prompts, test_prompts, seed)
    report["verdict"] = verdict(report)
    click.echo(json.dumps(report) if as_json else format_report(report))
