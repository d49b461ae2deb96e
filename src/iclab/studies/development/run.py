"""``iclab development RUN_DIR`` (docs/guide/development.md): every check first (the run, its
pool, its checkpoints, each bound to the run's config with its data matching its checksum, and
the settings), then each checkpoint measured against the exact predictors (``measure``) and,
asked, its LLC (``llc``), then the files (``outputs``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import torch
from tqdm import tqdm

from iclab.config.train import TrainConfig
from iclab.models.base import Model
from iclab.studies.development.llc import ESTIMATORS, ChainSettings, model_llc
from iclab.studies.development.measure import gd_layers, measure, predictor_losses, references
from iclab.studies.development.outputs import write_development
from iclab.studies.pool.family import PooledLinearGaussian
from iclab.training.run_folder import CONFIG, RunFolder
from iclab.training.snapshots import read_snapshot, snapshot_path, snapshot_steps
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator
from iclab.utils.threads import intra_op_threads

DEFAULT_PROMPTS = 4000
MAX_PROMPTS = 1_000_000


def read_run(run_dir: Path, registries: Any) -> tuple[TrainConfig, Any]:
    """The run's checked config and its family, which must be a task pool."""
    folder = RunFolder(run_dir)
    if not folder.config.is_file():
        raise ConfigError(f"{run_dir} is not an iclab run folder (no {CONFIG})")
    config = TrainConfig.from_json(folder.read_object(CONFIG), registries.models,
                                   families=registries.families)
    task = config.checked_task(registries.families)
    if not isinstance(task, PooledLinearGaussian):
        raise ConfigError(f"{run_dir}: iclab development compares a model with the exact "
                          f"predictors of a task pool; train with --tasks K or --task-pool")
    return config, task


def checked_states(run_dir: Path, config: TrainConfig) -> list[tuple[int, dict[str, Any]]]:
    """Every kept checkpoint's (step, weights), each checked (``read_snapshot``);
    ConfigError when there are none."""
    steps = snapshot_steps(run_dir)
    if not steps:
        raise ConfigError(f"{run_dir} holds no checkpoints (checkpoints/step-*.safetensors); "
                          f"train it with --checkpoints K")
    config_json = config.to_json()
    return [(step, read_snapshot(run_dir, step, config_json)) for step in steps]


def model_of(config: TrainConfig, state: dict[str, torch.Tensor], where: str) -> Model:
    """The float64 CPU model holding ``state`` (``where`` names the file in an error)."""
    model = config.model_class().create(config.task.d, config.model,
                                        make_generator(0, "load", fixed=True), torch.float64)
    try:
        model.load_state_dict({name: t.to(torch.float64) for name, t in state.items()})
    except Exception as error:  # torch raises several types
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:160]
        raise ConfigError(f"{where}: cannot load the model ({first})") from None
    model.eval()
    return model


def run_development(run_dir: Path, registries: Any, prompts: int = DEFAULT_PROMPTS,
                    llc: ChainSettings | None = None, progress: bool = True,
                    figure: bool = True, final_only: bool = False) -> dict[str, Any]:
    """Measure every checkpoint of ``run_dir`` (the last only with ``final_only``) and write
    development.json, .csv and (with ``figure``) .png."""
    run_dir = Path(run_dir)
    if isinstance(prompts, bool) or not isinstance(prompts, int) \
            or not 2 <= prompts <= MAX_PROMPTS:
        raise ConfigError(f"--prompts must be an integer in [2, {MAX_PROMPTS}], got "
                          f"{prompts!r}")
    if llc is not None:
        llc.check()
    config, task = read_run(run_dir, registries)
    states = checked_states(run_dir, config)
    states = states[-1:] if final_only else states
    seed = config.run.seed
    with intra_op_threads(1):
        layers = gd_layers(config.model)
        refs = references(task, prompts, seed, layers)
        llc_prompts = None if llc is None else task.sample_prompts(
            llc.samples, make_generator(seed, "development-llc"), torch.float64)
        rows = []
        for step, state in tqdm(states, desc="development", unit="checkpoint",
                                disable=not progress, dynamic_ncols=True):
            model = model_of(config, state, str(snapshot_path(run_dir, step)))
            row: dict[str, Any] = {"step": step, **measure(model, refs)}
            if llc is not None:
                estimate = model_llc(model, llc_prompts, llc, seed)
                row.update(llc=estimate["llc"], llc_stderr=estimate["llc_stderr"],
                           llc_loss=estimate["loss_star"])
            rows.append(row)
    data = {
        "run": str(run_dir), "config_hash": config.hash(), "prompts": prompts,
        "seed": seed, "tasks": len(task.task_pool), "d": task.d, "n": task.n,
        "sigma": task.sigma, "gd_layers": layers,
        "predictor_losses": predictor_losses(refs),
        "distances_on": "dist_NAME: the pool prompts (the training law); dist_NAME_fresh: "
                        "prompts with fresh tasks from the prior",
        "llc_settings": None if llc is None else llc.as_dict(),
        "measured": "the final checkpoint" if final_only else "every checkpoint",
        "checkpoints": rows,
    }
    write_development(run_dir, data, figure)
    return data


def format_summary(data: dict[str, Any]) -> str:
    """One line per checkpoint: the losses and the distances from dMMSE and ridge."""
    with_llc = data["llc_settings"] is not None
    head = (f"{'step':>8} {'loss pool':>10} {'loss fresh':>10} {'d(dmmse)':>10} "
            f"{'d(ridge)':>10} {'d(ls)':>10} {'mix':>5}" + (f" {'llc':>12}" if with_llc else ""))
    lines = [head]
    for row in data["checkpoints"]:
        line = (f"{row['step']:>8} {row['test_loss_pool']:>10.4g} {row['test_loss_fresh']:>10.4g}"
                f" {row['dist_dmmse']:>10.4g} {row['dist_ridge']:>10.4g} {row['dist_ls']:>10.4g}"
                f" {row['mix_dmmse']:>5.2f}")
        if with_llc:
            line += f" {row['llc']:>7.3g}±{row['llc_stderr']:<4.2g}"
        lines.append(line)
    lines.append(f"wrote development.json, development.csv, development.png in {data['run']}")
    return "\n".join(lines)

LLC_OPTIONS = {"samples": (int, "n: prompts of the pool the loss L_n is a mean over "
                                 "(beta = 1 / log n)"),
               "chains": (int, "independent SGLD chains from each checkpoint"),
               "burn_in": (int, "SGLD steps of each chain before its losses count"),
               "draws": (int, "recorded SGLD steps of each chain"),
               "step": (float, "SGLD's step epsilon"),
               "localisation": (float, "gamma, SGLD's pull towards the checkpoint"),
               "estimator": (click.Choice(ESTIMATORS), "whose SGLD chains: iclab's own or "
                             "the devinterp library's (pip install 'iclab[devinterp]')")}


def make_development_command(registries: Any) -> click.Command:
    """The ``development`` command of ``registries``' models and families."""

    def development(run_dir: str, prompts: int, llc: bool, as_json: bool, quiet: bool,
                    **chain: Any) -> None:
        """Measure every checkpoint of RUN_DIR (trained with --checkpoints K on a task pool)
        against the exact predictors (dMMSE, ridge, least squares, optimal 1- and L-step
        GD) on fixed seeded prompts from the pool and from the prior; with --llc also its
        local learning coefficient by SGLD. Writes development.json, development.csv and
        development.png in RUN_DIR."""
        given = {name: chain[f"llc_{name}"] for name in LLC_OPTIONS
                 if chain[f"llc_{name}"] is not None}
        if given and not llc:
            name = next(iter(given))
            raise ConfigError(f"--llc-{name.replace('_', '-')} applies with --llc only; add "
                              f"--llc or leave it out")
        settings = ChainSettings(**given) if llc else None
        data = run_development(Path(run_dir), registries, prompts, settings,
                               progress=not quiet)
        click.echo(json.dumps(data, allow_nan=False) if as_json else format_summary(data))

    defaults = ChainSettings()
    command = click.command("development")(development)
    options = [
        click.argument("run_dir", type=click.Path(file_okay=False)),
        click.option("--prompts", type=int, default=DEFAULT_PROMPTS, show_default=True,
                     help="Prompts in each fixed set (pool and prior)."),
        click.option("--llc", is_flag=True, help="Also estimate each checkpoint's local "
                     "learning coefficient by SGLD (Lau et al. 2023)."),
        *(click.option(f"--llc-{name.replace('_', '-')}", f"llc_{name}", type=kind,
                       default=None,
                       help=f"With --llc: {text} [default: {getattr(defaults, name)}].")
          for name, (kind, text) in LLC_OPTIONS.items()),
        click.option("--json", "as_json", is_flag=True,
                     help="Print development.json's content."),
        click.option("--quiet", is_flag=True, help="No progress bar."),
    ]
    for option in options:
        command = option(command)
    return command
