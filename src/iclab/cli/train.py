"""``iclab train``: train one model on a task family's prompts and judge it against theory.

Its options are generated from the config declarations: the task, optimiser and run fields,
and the options of every registered model (a model's options apply only to that model).
"""

from __future__ import annotations

from typing import Any

import click

from iclab.cli.options import apply_options, declared_options
from iclab.cli.run_options import ConfigRegistries, config_from_options, run_sections
from iclab.config.train import TrainConfig
from iclab.runs.folder import check_out_dir
from iclab.runs.pipeline import RunRegistries, run_training
from iclab.tracking import TRACKERS, Tracking, make_tracking


def _row(result: dict[str, Any], key: str, label: str, fmt: str) -> tuple[str, str] | None:
    value = result.get(key)
    return None if value is None else (label, format(value, fmt))


def _reference(depth: int | None) -> str:
    """What a run of this declared depth is judged against (``TrainConfig.depth``)."""
    return "L*" if depth is None else "the optimal L-step GD loss"


def format_result(result: dict[str, Any], depth: int | None = None) -> str:
    """A short human-readable table of a run's result, its verdict last; ``depth``: the
    depth the run's model declares (``TrainConfig.depth``), L for an L-layer stack, whose
    rows compare it with the optimal L-step GD."""
    rows: list[tuple[str, str] | None] = []
    if "eta_hat" in result:
        star = f"{result['eta_star']:.6f}" + (
            f" ± {result['eta_star_stderr']:.1e}" if result.get("eta_star_stderr") else "")
        nuisance = result.get("nuisance") or {}
        rows += [
            _row(result, "eta_hat", "eta_hat (learned step size)", ".6f"),
            ("eta* = tr(Gamma*)/d", star),
            ("|eta_hat/eta* - 1|", f"{100 * result['eta_rel_err']:.3f} %"),
            ("isotropy error", f"{100 * result['isotropy_err']:.3f} %"),
            ("Gamma relative error", f"{100 * result['gamma_rel_err']:.3f} %"),
            ("largest nuisance share", f"{max(nuisance.values(), default=0.0):.2e}"),
        ]
    for key, name in (("vs_optimal_gd", "one-step GD*"), ("vs_ridge", "ridge"),
                      ("vs_ols", "OLS")):
        measures = result.get(key)
        if measures and "eta_hat" not in result:
            rows.append((f"vs {name}: |diff|, cosine",
                         f"{measures['mean_abs_prediction_difference']:.4f}, "
                         f"{measures['sensitivity_cosine']:.4f}"))
    if depth is not None:
        se = result.get("gd_steps_loss_stderr") or 0.0
        rows.append((f"optimal {depth}-step GD loss",
                     f"{result['gd_steps_loss']:.5f}" + (f" ± {se:.5f}" if se else "")))
        rows.append(("optimal steps (sorted)",
                     ", ".join(f"{eta:.5f}" for eta in result["gd_steps_etas"])))
        if "layer_steps" in result:
            rows.append(("learned layer steps (sorted)",
                         ", ".join(f"{eta:.5f}" for eta in result["layer_steps"])))
    rows += _pool_rows(result)
    for key in sorted(key for key in result if key.endswith("_rows")):  # a run output's rows
        rows += [(str(label), str(text)) for label, text in result[key]]
    rows += [
        ("test loss", f"{result['test_loss']:.5f} ± {result['test_loss_stderr']:.5f}"),
        ("optimal loss L*", f"{result['loss_star']:.5f}"),
        _row(result, "wall_seconds", "wall time", ".1f"),
    ]
    shown = [row for row in rows if row is not None]
    width = max(len(name) for name, _ in shown)
    lines = [f"{name:<{width}}  {value}" for name, value in shown]
    if "verdict" in result:
        z = result.get("excess_z", 0.0)
        lines.append(f"{'verdict':<{width}}  {result['verdict']} (test loss "
                     f"{z:+.1f} standard errors from {_reference(depth)})")
        reason = (result.get("verdict_evidence") or {}).get("reason")
        if reason and result["verdict"] in ("undetermined", "not optimal"):
            lines.append(f"{'because':<{width}}  {reason}")
    return "\n".join(lines)


def _pool_rows(result: dict[str, Any]) -> list[tuple[str, str] | None]:
    """A pooled run's rows (docs/theory.md section 15): fresh tasks, the nuisance-free optimum,
    the baselines; its test loss and L* are the pool's."""
    if "test_loss_fresh" not in result:
        return []
    rows: list[tuple[str, str] | None] = [
        ("test loss on fresh tasks", f"{result['test_loss_fresh']:.5f} ± "
                                     f"{result['test_loss_fresh_stderr']:.5f}"),
        _row(result, "loss_star_fresh", "L* weights on fresh tasks", ".5f"),
        _row(result, "loss_star_nuisance_free", "nuisance-free optimum (pool)", ".5f"),
        _row(result, "loss_local", "local minimum of the trained weights", ".5f")]
    for name, baseline in (result.get("baselines") or {}).items():
        rows.append((f"{name}: pool, fresh tasks",
                     f"{baseline['loss_pool']:.5f}, {baseline['loss_fresh']:.5f}"))
    return rows


def train_run(values: dict[str, Any], registries: ConfigRegistries,
              run_registries: RunRegistries, out: str, quiet: bool, restart: bool,
              tracking: Tracking | None = None) -> tuple[TrainConfig, dict[str, Any]]:
    """The config of the option ``values`` and the result of its run in ``out``: what
    ``iclab train`` and ``iclab.train`` both do (the same code path, so the same numbers);
    ``tracking``: the checked trackers (``iclab.tracking.make_tracking``)."""
    path = check_out_dir(out)  # before Path(""), which is the current folder
    config = config_from_options(values, registries)
    result = run_training(config, path, progress=not quiet, restart=restart,
                          registries=run_registries, tracking=tracking)
    return config, result


def make_train_command(registries: ConfigRegistries, model: str | None = None,
                       family: str | None = None) -> click.Command:
    """The ``train`` command with the options of ``model`` and ``family`` (the ones the
    command line names: lsa and linear-gaussian by default), each with its own default;
    every other model's and family's options are hidden (``iclab.cli.run_options``)."""

    def train_command(run_registries: RunRegistries, out: str, quiet: bool, restart: bool,
                      track: tuple[str, ...], track_uri: str | None, **values: Any) -> None:
        """Train a model and compare what it learned with the optimal one-step GD.

        Writes OUT/config.json, OUT/metrics.jsonl, OUT/model.safetensors and, last,
        OUT/result.json (with a verdict: "optimal" when the test loss is within 4 standard
        errors of the optimal LSA loss L*, those 4 standard errors are within 5 % of L*,
        and a read-out's Gamma is within 10 % of Gamma*; for --layers L with the sparse
        parameterisation, against the optimal L-step GD, also "optimal" when its read-out
        shows every learned step within the curvature tolerance of the optimal step (the
        step error that raises the exact L-step loss by at most 5 %) and every layer
        isotropic within it, and "not optimal" when a step is clearly outside and the test
        loss above; "undetermined" when the evidence is too thin). Running the same
        command again resumes an interrupted run; a finished run is not re-run.
        --track tensorboard|mlflow|wandb (repeatable) also logs the config, every metrics
        line, the result and the figures there (docs/guide/tracking.md).
        """
        tracking = make_tracking(track, track_uri)  # a missing library: refused first
        config, result = train_run(values, registries, run_registries, out, quiet, restart,
                                   tracking)
        depth = config.depth()
        click.echo(format_result(result, depth))
        if result.get("verdict") in ("not optimal", "undetermined"):
            reason = (result.get("verdict_evidence") or {}).get("reason", "")
            what = ("the trained model is not optimal" if result["verdict"] == "not optimal"
                    else "the verdict is undetermined")
            click.echo(f"iclab: warning: {what}: {reason}", err=True)

    visible, hidden = run_sections(registries, model, family)
    options = [
        click.option("--model", default=None,
                     help=f"Model: {registries.models.allowed()} (iclab models) [default: lsa]; "
                          f"--model NAME --help shows its options."),
        *declared_options(visible),
        *declared_options(hidden, hidden=True, skip=visible),
        click.option("--restart", is_flag=True,
                     help="Remove the run's checkpoint, metrics and result, and start over."),
        click.option("--track", multiple=True, type=click.Choice(TRACKERS),
                     help="Also log to this experiment tracker (repeatable; each an optional "
                          "extra: pip install 'iclab[NAME]'); docs/guide/tracking.md."),
        click.option("--track-uri", default=None,
                     help="MLflow's tracking URI (only with --track mlflow) "
                          "[default: a file store in OUT/mlruns]."),
        click.option("--quiet", is_flag=True, help="No progress bar."),
        click.option("--out", type=click.Path(file_okay=False), required=True,
                     help="Run folder."),
    ]
    return click.command("train")(apply_options(click.pass_obj(train_command), options))
