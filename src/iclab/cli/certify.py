"""``iclab certify DIR``: how far a trained run's loss is above the span bound of every LSA."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click

from iclab.runs.certify import certify_run
from iclab.theory.span import TEST_PROMPTS

VERDICT_Z = 3.0
RESOLUTION = 0.05
"""The largest excess, relative to the bound, a "certified" verdict may leave unresolved:
VERDICT_Z paired standard errors must be within 5 % of the bound."""
EVIDENCE_NEEDED = (f"certified: |paired z| <= {VERDICT_Z:g} with {VERDICT_Z:g} paired standard "
                   f"errors within {RESOLUTION:g} of the bound, every number finite; not "
                   f"optimal: paired z > {VERDICT_Z:g}; otherwise undetermined or inconclusive")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def verdict(report: dict[str, Any]) -> str:
    """One sentence: at the bound (|paired z| <= 3, precise enough), above it by how much,
    inconclusive, or undetermined (a number missing or not finite, or too imprecise)."""
    z, z_combined = _number(report.get("z_paired")), _number(report.get("z"))
    se, bound = _number(report.get("paired_excess_stderr")), _number(report.get("bound"))
    if z is None or z_combined is None or se is None or bound is None or bound <= 0:
        return ("undetermined: a z or the bound is not a finite number (no spread in the "
                "losses, or an overflow), so nothing can be certified")
    if z > VERDICT_Z:
        return (f"not optimal: the model's loss is {z:.1f} standard errors above the lower "
                f"bound (paired), {z_combined:.1f} combined")
    if z < -VERDICT_Z:
        return (f"inconclusive: the model's loss is {-z:.1f} standard errors below the estimated "
                f"bound; the bound's fit is too coarse, raise --fit-prompts")
    precision = VERDICT_Z * se / bound
    if precision > RESOLUTION:
        return (f"undetermined: {VERDICT_Z:g} paired standard errors are {100 * precision:.3g} "
                f"% of the bound, more than the {100 * RESOLUTION:g} % a certificate needs: "
                f"raise --test-prompts")
    return (f"certified: the model's loss is within {VERDICT_Z:g} standard errors of the "
            f"lower bound (paired z = {z:.2f}), so it is a global optimum of one-layer LSA "
            f"up to Monte Carlo precision")


def _z(value: Any) -> str:
    number = _number(value)
    return "n/a" if number is None else f"{number:.2f}"


def _g(value: Any, spec: str) -> str:
    number = _number(value)
    return "n/a" if number is None else format(number, spec)


def format_report(report: dict[str, Any]) -> str:
    """A readable table of the comparison."""
    span = report["span"]
    rows = [
        ("run", report["run"]),
        ("family", report["family"]),
        ("model test loss", f"{_g(report['test_loss'], '.6f')} ± "
                            f"{_g(report['test_loss_stderr'], '.2g')}"),
        ("span bound (all LSAs)", f"{_g(report['bound'], '.6f')} ± "
                                  f"{_g(report['bound_stderr'], '.2g')}"),
        ("excess (combined)", f"{_g(report['excess'], '.3g')} ± "
                              f"{_g(report['excess_stderr'], '.2g')}  (z = {_z(report['z'])})"),
        ("excess (paired)", f"{_g(report['paired_excess'], '.3g')} ± "
                            f"{_g(report['paired_excess_stderr'], '.2g')}"
                            f"  (z = {_z(report['z_paired'])})"),
        ("span optimum eta", f"{_g(span['eta'], '.6f')} ± {_g(span['eta_stderr'], '.2g')}"),
        ("span isotropy error", f"{_g(100 * (_number(span['isotropy_err']) or math.nan), '.3f')}"
                                f" %"),
        ("span nuisance shares", ", ".join(f"{name} {_g(value, '.1e')}" for name, value
                                           in (span["nuisance"] or {}).items())),
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
    report["verdict_needs"] = EVIDENCE_NEEDED
    click.echo(json.dumps(report, allow_nan=False) if as_json else format_report(report))
