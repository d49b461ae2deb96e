"""``iclab train``: train one model on a task family's prompts and judge it against theory.

Its options are generated from the config declarations: the task, optimiser and run fields,
and the options of every registered model (a model's options apply only to that model).
"""

from __future__ import annotations

from typing import Any

import click

from iclab.cli.options import apply_options, declared_options, flag_name
from iclab.config.sections import DEFAULT_MODEL, SECTIONS
from iclab.config.train import TrainConfig
from iclab.models.registry import ModelRegistry
from iclab.runs.folder import check_out_dir
from iclab.runs.pipeline import RunRegistries, run_training
from iclab.tasks.covariance import load_covariance
from iclab.tasks.pool import load_pool
from iclab.utils.errors import ConfigError
from iclab.utils.fields import field_infos, validate

COVARIANCES = ("cov_x", "cov_w", "context_covariance", "task_pool")
"""The matrix options, read from .npy files: cov_x, cov_w are (d, d), context_covariance is
(n+1, n+1), task_pool is (K, d) (``iclab.tasks.pool.load_pool``)."""


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


def _model_notes(registry: ModelRegistry) -> list[tuple[type, str]]:
    """Each model's options class with the note shown in --help."""
    notes = []
    for model_class in registry.models():
        notes.append((model_class.options_class, f" (model {model_class.name})"))
    return notes


def config_from_options(values: dict[str, Any], registry: ModelRegistry) -> TrainConfig:
    """The validated config of the given option values (None = not given); covariance files
    are read only after every scalar option is checked."""
    model_name = values.pop("model")
    model_name = DEFAULT_MODEL if model_name is None else model_name
    model_class = registry.get(model_name)
    model_fields = field_infos(model_class.options_class)
    others = {name for cls, _ in _model_notes(registry) for name in field_infos(cls)}
    given = {k: v for k, v in values.items() if v is not None}
    for name in given:
        if name in others and name not in model_fields:
            takers = [m.name for m in registry.models()
                      if name in field_infos(m.options_class)]
            hint = "; the two-layer-relu family's width is --relu-width" \
                if name == "width" else ""
            raise ConfigError(f"{flag_name(name)} applies only to model "
                              f"{' or '.join(takers)}, not {model_name!r}{hint}")
    scalars = {k: v for k, v in given.items() if k not in COVARIANCES}
    if model_name != DEFAULT_MODEL:
        scalars["model"] = model_name
    config = TrainConfig.from_json(scalars, registry)
    covariances = {k: given[k] for k in COVARIANCES if k in given}
    if covariances:
        family = config.task.family
        if family != "linear-gaussian":
            flags = "/".join(flag_name(k) for k in covariances)
            verb = "applies" if len(covariances) == 1 else "apply"
            raise ConfigError(f"{flags} {verb} only to --family linear-gaussian, not "
                              f"{family!r}")
        _check_scalars(config)  # scalar options first, before any file is read
        sizes = {"cov_x": config.task.d, "cov_w": config.task.d,
                 "context_covariance": config.task.n + 1}
        scalars.update({k: (load_pool(v, config.task.d) if k == "task_pool" else
                            load_covariance(v, sizes[k])).tolist()
                        for k, v in covariances.items()})
        config = TrainConfig.from_json(scalars, registry)
    return config


def _check_scalars(config: TrainConfig) -> None:
    """Each declared value of ``config`` within its bounds (the family, built once, is checked
    with the rest by ``run_training``)."""
    for section in (config.task, config.optim, config.run, config.model):
        validate(section)


def make_train_command(registry: ModelRegistry) -> click.Command:
    """The ``train`` command with options for the models in ``registry``."""

    def train_command(registries: RunRegistries, out: str, quiet: bool, restart: bool,
                      **values: Any) -> None:
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
        """
        path = check_out_dir(out)  # before Path(""), which is the current folder
        config = config_from_options(values, registry)
        result = run_training(config, path, progress=not quiet, restart=restart,
                              registries=registries)
        depth = config.depth()
        click.echo(format_result(result, depth))
        if result.get("verdict") in ("not optimal", "undetermined"):
            reason = (result.get("verdict_evidence") or {}).get("reason", "")
            what = ("the trained model is not optimal" if result["verdict"] == "not optimal"
                    else "the verdict is undetermined")
            click.echo(f"iclab: warning: {what}: {reason}", err=True)

    sections = [(cls, "") for cls in SECTIONS] + _model_notes(registry)
    options = [
        click.option("--model", default=None,
                     help=f"Model: {registry.allowed()} (iclab models) [default: lsa]."),
        *declared_options(sections),
        click.option("--restart", is_flag=True,
                     help="Remove the run's checkpoint, metrics and result, and start over."),
        click.option("--quiet", is_flag=True, help="No progress bar."),
        click.option("--out", type=click.Path(file_okay=False), required=True,
                     help="Run folder."),
    ]
    return click.command("train")(apply_options(click.pass_obj(train_command), options))
