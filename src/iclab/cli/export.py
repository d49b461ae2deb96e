"""``iclab export RUN_DIR --format torch|npz``: a finished run's model as files that need only
PyTorch (or NumPy) to load (``iclab.runs.export``)."""

from __future__ import annotations

import click

from iclab.experiments.registries import Registries
from iclab.runs.export import FORMATS, SUPPORTED, export_run


@click.command("export")
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--format", "fmt", required=True, type=click.Choice(FORMATS),
              help="torch: model.py (a plain PyTorch module) and model.pt (its state dict, "
                   "torch.load(weights_only=True)); npz: weights.npz and model_numpy.py.")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Output folder [default: RUN_DIR/export-FORMAT].")
@click.pass_obj
def export_command(registries: Registries, run_dir: str, fmt: str, out: str | None) -> None:
    """Write the trained model of the finished run in RUN_DIR as files other tools open
    without iclab: ``from model import load; model = load()`` in the folder written. """
    folder = export_run(run_dir, fmt, out, registries.models, registries.families)
    click.echo(f"exported {run_dir} ({fmt}) to {folder}")


export_command.help = (export_command.help or "") + f"\n\nSupported: {SUPPORTED}."
