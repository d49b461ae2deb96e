"""``iclab probe RUN_DIR``: ridge probes from every hook point of a finished run's model to
the exact iterates and moments of its prompts (docs/guide/probes.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from iclab.studies.probes.outputs import write_probe_outputs
from iclab.studies.probes.probe_run import (
    ProbeSettings,
    parse_layers,
    parse_list,
    probe_run,
)
from iclab.studies.probes.targets import ALL_TARGETS, DEFAULT_TARGETS


def format_rows(data: dict[str, Any]) -> str:
    """One line per hook point, position and target: R^2 (se) trained, init, shuffled."""
    table: dict[tuple[str, str, str], dict[str, str]] = {}
    for row in data["rows"]:
        key = (row["hook"], row["position"], row["target"])
        table.setdefault(key, {})[row["control"]] = f"{row['r2']:.3f} ({row['r2_stderr']:.3f})"
    lines = [f"{'hook':<9} {'position':<8} {'target':<13} {'trained':>16} {'init':>16} "
             f"{'shuffled':>16}"]
    for (hook, position, target), cells in table.items():
        lines.append(f"{hook:<9} {position:<8} {target:<13} {cells.get('trained', '-'):>16} "
                     f"{cells.get('init', '-'):>16} {cells.get('shuffled', '-'):>16}")
    return "\n".join(lines)


def probe_command(registries: Any) -> click.Command:
    """The ``iclab probe`` command on ``registries``."""

    @click.command("probe")
    @click.argument("run_dir", type=click.Path(file_okay=False))
    @click.option("--targets", "targets_text", default=",".join(DEFAULT_TARGETS),
                  show_default=True,
                  help=f"Comma-separated exact targets: {', '.join(ALL_TARGETS)}.")
    @click.option("--layers", "layers_text", default="all", show_default=True,
                  help="'all' or comma-separated layer numbers (resid.0 is layer 0).")
    @click.option("--hooks", "hooks_text", default=None,
                  help="Comma-separated hook points or kinds (resid, attn, state, ...) "
                       "[default: every hook point of the model].")
    @click.option("--positions", "positions_text", default="query,context", show_default=True,
                  help="query (the last position) and/or context (the one before it).")
    @click.option("--prompts", type=int, default=2000, show_default=True,
                  help="Seeded prompts the probes are fitted and scored on.")
    @click.option("--folds", type=int, default=5, show_default=True,
                  help="Cross-fitting folds (held-out R^2).")
    @click.option("--seed", type=int, default=0, show_default=True)
    @click.option("--ridge-lambda", type=float, default=None,
                  help="Penalty of the w_ridge target [default: sigma^2].")
    @click.option("--out", type=click.Path(file_okay=False), default=None,
                  help="Output folder [default: RUN_DIR].")
    @click.option("--json", "as_json", is_flag=True, help="Print probe.json's content.")
    def command(run_dir: str, targets_text: str, layers_text: str, hooks_text: str | None,
                positions_text: str, prompts: int, folds: int, seed: int,
                ridge_lambda: float | None, out: str | None, as_json: bool) -> None:
        """Fit ridge probes (penalty by leave-one-out cross-validation, seeded folds) from
        each hook point of the model in RUN_DIR, at the query and the last context
        position, to each exact target of one seeded prompt set: held-out R^2 and its
        standard error per hook point and target, beside two controls (the model at its
        random initialisation; the targets shuffled across prompts). Writes probe.json,
        probe.csv and probe.png."""
        settings = ProbeSettings(
            targets=parse_list(targets_text, "--targets"),
            hooks=None if hooks_text is None else parse_list(hooks_text, "--hooks"),
            layers=parse_layers(layers_text),
            positions=parse_list(positions_text, "--positions"),
            prompts=prompts, folds=folds, seed=seed, ridge_lambda=ridge_lambda)
        data = probe_run(run_dir, settings, registries)
        write_probe_outputs(Path(out) if out is not None else Path(run_dir), data)
        click.echo(json.dumps(data, allow_nan=False) if as_json else format_rows(data))

    return command
