"""``iclab shift RUN_DIR``: a finished run under shifted test laws, with exact curves."""

from __future__ import annotations

import json

import click

from iclab.studies.shift.laws import ALL_SHIFT_KINDS
from iclab.studies.shift.run import DEFAULT_PROMPTS, shift_run


def format_rows(data: dict[str, object]) -> str:
    """A table: value, model loss ± se, exact loss, and the baselines' losses."""
    rows = data["rows"]
    assert isinstance(rows, list)
    header = f"{'value':>8}  {'model':>18}  {'exact':>10}  {'ols':>10}  {'ridge':>10}  " \
             f"{'gd':>10}  {'bayes':>10}"
    lines = [header]
    for row in rows:
        exact = "-" if row["exact_loss"] is None else f"{row['exact_loss']:.4g}"
        lines.append(f"{row['value']:>8g}  {row['model_loss']:>10.4g} ± "
                     f"{row['model_loss_stderr']:<5.2g}  {exact:>10}  {row['ols_loss']:>10.4g}"
                     f"  {row['ridge_loss']:>10.4g}  {row['gd_loss']:>10.4g}  "
                     f"{row['bayes_loss']:>10.4g}")
    return "\n".join(lines)


@click.command("shift")
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--kind", required=True,
              help=f"The shift: {', '.join(ALL_SHIFT_KINDS)}.")
@click.option("--values", "values_text", required=True,
              help="Comma-separated values of the shifted quantity, e.g. 0.5,1,2,4.")
@click.option("--prompts", type=int, default=DEFAULT_PROMPTS, show_default=True,
              help="Fresh prompts per value (every predictor sees the same ones).")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Output folder [default: RUN_DIR/shift-KIND].")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print shift.json's content.")
def shift_command(run_dir: str, kind: str, values_text: str, prompts: int, out: str | None,
                  seed: int, as_json: bool) -> None:
    """Evaluate the finished run in RUN_DIR under shifted test laws, one per value.

    Kinds: n (context examples at test time), sigma (test noise), x-scale (all covariates
    scaled: the covariate shift), query-scale (the query only), w-scale (the task vector),
    w-mean (w ~ N(m 1/sqrt(d), Sigma_w)), skewed-covariance (x ~ N(0, S), S's eigenvalues
    proportional to i^-value; Garg et al.: 2); Garg et al.'s orthant, orthant-random and
    orthogonal-query (values 0 to 1; Monte Carlo only, no exact loss). For each value: the
    model's test loss, the exact population loss of its read-out under the test law, and on
    the same prompts OLS, ridge
    at the training prior, one-step GD with Gamma* and the Bayes-optimal predictor of the
    test law. Writes shift.json, shift.csv and shift.png.
    """
    data = shift_run(run_dir, kind, values_text, prompts, out, seed)
    click.echo(json.dumps(data, allow_nan=False) if as_json else format_rows(data))
