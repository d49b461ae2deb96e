"""``iclab train``: train one LSA on a task family's prompts and judge it against the theory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from iclab.errors import ConfigError
from iclab.tasks.covariance import load_covariance
from iclab.training.config import TrainConfig
from iclab.training.loop import train

DEFAULTS = TrainConfig(d=1, n=1, sigma=0.0)


def _covariance(path: str | None, d: int) -> list[list[float]] | None:
    return None if path is None else load_covariance(path, d).tolist()


def format_result(result: dict[str, Any]) -> str:
    """A short human-readable table of a run's result."""
    rows = [
        ("eta_hat (learned step size)", f"{result['eta_hat']:.6f}"),
        ("eta* = tr(Gamma*)/d", f"{result['eta_star']:.6f}"
         + (f" ± {result['eta_star_stderr']:.1e}" if result.get("eta_star_stderr") else "")),
        ("|eta_hat/eta* - 1|", f"{100 * result['eta_rel_err']:.3f} %"),
        ("isotropy error", f"{100 * result['isotropy_err']:.3f} %"),
        ("Gamma relative error", f"{100 * result['gamma_rel_err']:.3f} %"),
        ("largest nuisance share", f"{max(result['nuisance'].values()):.2e}"),
        ("test loss", f"{result['test_loss']:.5f} ± {result['test_loss_stderr']:.5f}"),
        ("optimal loss L*", f"{result['loss_star']:.5f}"),
        ("wall time", f"{result['wall_seconds']:.1f} s"),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


@click.command("train")
@click.option("--d", "d", type=int, required=True, help="Input dimension d >= 1.")
@click.option("--n", "n", type=int, required=True, help="Examples per prompt n >= 1.")
@click.option("--sigma", type=float, required=True, help="Label noise sigma >= 0.")
@click.option("--cov-x", type=click.Path(dir_okay=False), help="Sigma_x as a (d, d) .npy file.")
@click.option("--cov-w", type=click.Path(dir_okay=False), help="Sigma_w as a (d, d) .npy file.")
@click.option("--family", type=str, default=DEFAULTS.family, show_default=True,
              help="linear-gaussian, relu, two-layer-relu, anisotropic or MODULE:FUNCTION.")
@click.option("--width", type=int, default=None,
              help="Hidden width m of two-layer-relu [default: 8].")
@click.option("--steps", type=int, default=DEFAULTS.steps, show_default=True)
@click.option("--batch", type=int, default=DEFAULTS.batch, show_default=True,
              help="Fresh prompts per step.")
@click.option("--lr", type=float, default=DEFAULTS.lr, show_default=True,
              help="Adam's initial learning rate (cosine-decayed to 0).")
@click.option("--lr-schedule", type=str, default=DEFAULTS.lr_schedule, show_default=True,
              help="cosine or constant.")
@click.option("--seed", type=int, default=DEFAULTS.seed, show_default=True)
@click.option("--device", type=str, default=DEFAULTS.device, show_default=True,
              help="cpu or cuda.")
@click.option("--sampler", type=str, default=DEFAULTS.sampler, show_default=True,
              help="statistics (cost independent of n), prompts, or auto.")
@click.option("--key-dim", type=int, default=None, help="Key/query width k [default: d+1].")
@click.option("--value-dim", type=int, default=None, help="Value width m [default: d+1].")
@click.option("--normalise/--no-normalise", default=False, show_default=True,
              help="Divide the attention sum by n.")
@click.option("--attend-query/--no-attend-query", default=False, show_default=True,
              help="Let the query token attend to itself.")
@click.option("--init-scale", type=float, default=DEFAULTS.init_scale, show_default=True)
@click.option("--init", "init", type=str, default=DEFAULTS.init, show_default=True,
              help="gd-subspace (u_x = m_y = 0 at the start) or random (every weight "
                   "random; can end in a non-global local minimum).")
@click.option("--checkpoint-every", type=int, default=DEFAULTS.checkpoint_every,
              show_default=True)
@click.option("--log-every", type=int, default=DEFAULTS.log_every, show_default=True)
@click.option("--eval-prompts", type=int, default=DEFAULTS.eval_prompts, show_default=True,
              help="Fresh prompts for the test loss.")
@click.option("--exact", is_flag=True,
              help="Train on the exact population loss (float64 L-BFGS, no sampling).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--out", type=click.Path(file_okay=False), required=True, help="Run folder.")
def train_command(
    d: int, n: int, sigma: float, cov_x: str | None, cov_w: str | None, family: str,
    width: int | None, steps: int, batch: int,
    lr: float, lr_schedule: str, seed: int, device: str, sampler: str, key_dim: int | None,
    value_dim: int | None, normalise: bool, attend_query: bool, init_scale: float, init: str,
    checkpoint_every: int, log_every: int, eval_prompts: int, exact: bool, quiet: bool, out: str,
) -> None:
    """Train a one-layer LSA and compare what it learned with the optimal one-step GD.

    Writes OUT/config.json, OUT/metrics.jsonl, OUT/model.safetensors and, last,
    OUT/result.json. Running the same command again resumes an interrupted run.
    """
    config = TrainConfig(
        d=d, n=n, sigma=sigma, family=family, width=width, steps=steps, batch=batch, lr=lr,
        lr_schedule=lr_schedule, seed=seed, device=device, sampler=sampler, key_dim=key_dim,
        value_dim=value_dim, normalise=normalise, attend_query=attend_query, init_scale=init_scale,
        init=init,
        checkpoint_every=checkpoint_every, log_every=log_every, eval_prompts=eval_prompts,
        exact=exact,
    )
    config.validate()  # scalar options first, so a bad --d is named before any file is read
    if (cov_x is not None or cov_w is not None) and family != "linear-gaussian":
        raise ConfigError(f"--cov-x/--cov-w apply only to --family linear-gaussian, not {family!r}")
    config = TrainConfig(**{**config.to_json(), "cov_x": _covariance(cov_x, d),
                            "cov_w": _covariance(cov_w, d)}).validate()
    result = train(config, Path(out), progress=not quiet)
    click.echo(format_result(result))
