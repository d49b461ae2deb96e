"""``iclab patch RUN_DIR``: task vectors patched from one task's prompts into another's, the
moved fraction of the prediction per layer (``iclab.studies.probes.patching``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from iclab.studies.probes.patching import patch_run
from iclab.studies.probes.probe_run import parse_layers
from iclab.utils.io import atomic_write_json, atomic_write_text, csv_text


def patch_command(registries: Any) -> click.Command:
    """The ``iclab patch`` command on ``registries``."""

    @click.command("patch")
    @click.argument("run_dir", type=click.Path(file_okay=False))
    @click.option("--layers", "layers_text", default="all", show_default=True,
                  help="'all' or comma-separated layers of the patchable hook points.")
    @click.option("--pairs", type=int, default=16, show_default=True,
                  help="Pairs of tasks (w_A, w_B): the standard error is over pairs.")
    @click.option("--prompts", type=int, default=64, show_default=True,
                  help="Prompts per task (the task vector is their mean).")
    @click.option("--seed", type=int, default=0, show_default=True)
    @click.option("--out", type=click.Path(file_okay=False), default=None,
                  help="Output folder [default: RUN_DIR].")
    @click.option("--json", "as_json", is_flag=True, help="Print patch.json's content.")
    def command(run_dir: str, layers_text: str, pairs: int, prompts: int, seed: int,
                out: str | None, as_json: bool) -> None:
        """Patch task vectors: at each layer's residual stream, the mean over a task's
        prompts at the query position, exchanged into the prompts of another task; prints
        and writes (patch.json, patch.csv) the moved fraction of the prediction toward the
        source task's prediction per layer, with its standard error over task pairs."""
        data = patch_run(run_dir, parse_layers(layers_text), pairs, prompts, seed,
                         registries)
        folder = Path(out) if out is not None else Path(run_dir)
        atomic_write_json(folder / "patch.json", data)
        atomic_write_text(folder / "patch.csv", csv_text(data["rows"]))
        if as_json:
            click.echo(json.dumps(data, allow_nan=False))
            return
        click.echo(f"{'hook':<9} {'moved fraction':>15} {'(se)':>8}")
        for row in data["rows"]:
            click.echo(f"{row['hook']:<9} {row['moved_fraction']:>15.4f} "
                       f"({row['moved_fraction_stderr']:.4f})")
        click.echo(f"best layer: {data['best_layer']}")

    return command
