"""``iclab dynamics``: SGD's loss curve beside the exact gradient flow from the same start,
with the plateaus named by the rank-k losses (docs/guide/dynamics.md)."""

from __future__ import annotations

import json
from typing import Any

import click

from iclab.cli.options import apply_options, declared_options
from iclab.cli.run_options import ConfigRegistries, config_from_options, run_sections
from iclab.studies.dynamics.checks import UNHONOURED
from iclab.studies.dynamics.run import DEFAULT_REPLICATES, run_dir_dynamics, run_dynamics
from iclab.utils.errors import ConfigError

DEFAULT_BATCH = 100
"""Prompts per SGD step in ``iclab dynamics`` (SGD's stationary excess over the flow is
O(lr / batch), its lag at a drop O(lr), below its noise when lr x batch is small;
docs/guide/dynamics.md)."""
FLOW_ONLY_UNUSED = ("batch", "eval_prompts", "sampler", "replicates")
"""Options that only shape the SGD curve: refused with --flow-only."""
NOT_RUN = ("checkpoint_every",)
"""Options of iclab train that iclab dynamics never uses (it keeps no checkpoints)."""
LOGGED_TIMES = 30
"""``iclab dynamics`` logs every steps // 30 steps unless --log-every is given."""


def format_summary(data: dict[str, Any]) -> str:
    """The plateaus, the final loss against L*, and the drop times."""
    lines = [f"{'plateau k':>9}  {'loss':>12}  {'L_k':>12}  {'from t':>10}  {'to t':>10}"]
    levels = data["rank_k_losses"]
    for plateau in data["plateaus"]:
        k = plateau["components"]
        level = "-" if k is None else f"{levels[k]:.8g}"
        lines.append(f"{'-' if k is None else k:>9}  {plateau['loss']:>12.8g}  {level:>12}  "
                     f"{plateau['start']:>10.4g}  {plateau['end']:>10.4g}")
    lines.append(f"flow's final loss {data['flow_final_loss']:.10g} at t = "
                 f"{data['flow_final_time']:.4g}; L* = {data['loss_star']:.10g}")
    if not data["flow_converged"]:
        lines.append(f"the flow has not converged: it stopped ({data['flow_stop']}) "
                     f"{data['flow_gap']:.3g} (relative) above the best loss the heads can "
                     f"reach, {data['flow_target']:.10g}; converged means within "
                     f"{data['flow_converged_gap']:g}")
    if data["sgd_loss"] is not None:
        worst = max((abs(s - f) / e for s, f, e in zip(data["sgd_loss"][1:],
                     data["flow_loss"][1:], data["sgd_loss_stderr"][1:], strict=True) if e),
                    default=None)
        if worst is not None:
            lines.append(f"largest |SGD - flow| after the first time: {worst:.2f} standard "
                         f"errors")
    if data["drop_time_analytic"] is not None:
        lines.append(f"half-drop time: flow {data['drop_time_flow']:.6g}, analytic "
                     f"{data['drop_time_analytic']:.6g}")
    return "\n".join(lines)


def _check_used(given: dict[str, Any], flow_only: bool) -> None:
    """ConfigError (one line naming the option) for a given option dynamics would record
    but not use: the optimiser's options the flow has no counterpart for (``UNHONOURED``; a
    run folder's config is checked for them too), a device other than the CPU,
    --checkpoint-every, and with --flow-only the SGD curve's options."""
    for name in UNHONOURED:
        if given.get(name) not in (None, False):
            raise ConfigError(f"iclab dynamics compares plain SGD on fresh prompts with the "
                              f"flow and does not honour --{name.replace('_', '-')}; leave it "
                              f"out")
    device = given.get("device")
    if device is not None and device != "cpu":
        raise ConfigError(f"iclab dynamics runs on the CPU; got --device {device} (leave it "
                          f"out)")
    unused = [*NOT_RUN, *(FLOW_ONLY_UNUSED if flow_only else ())]
    for name in unused:
        if given.get(name) is not None:
            why = "with --flow-only (no SGD is run)" if name in FLOW_ONLY_UNUSED else \
                "(it keeps no checkpoints)"
            raise ConfigError(f"iclab dynamics does not use --{name.replace('_', '-')} "
                              f"{why}; leave it out")


def make_dynamics_command(registries: ConfigRegistries,
                          family: str | None = None) -> click.Command:
    """The ``dynamics`` command (the task, lsa and optimiser options of ``iclab train``; a
    family's own options for the ``--family`` on the command line)."""

    def dynamics_command(run_dir: str | None, out: str | None, flow_only: bool,
                         replicates: int, as_json: bool, quiet: bool, **values: Any) -> None:
        """SGD on sampled prompts and the exact gradient flow of the population loss from
        the same seeded start, at t = lr x step; or, with RUN_DIR, the flow beside a
        finished SGD run's metrics. Writes dynamics.json, dynamics.csv, dynamics.png in OUT
        [default: RUN_DIR/dynamics, or dynamics-HASH]. Defaults differ from iclab train's:
        --optimizer sgd, --lr-schedule constant, --batch 100, --log-every steps // 30."""
        given = {k: v for k, v in values.items() if v is not None}
        if run_dir is not None:
            if given or flow_only or replicates is not None:
                raise ConfigError("with RUN_DIR, give no task, model or optimiser options "
                                  "(they come from the run)")
            data = run_dir_dynamics(run_dir, out, progress=not quiet)
        else:
            if values.get("d") is None or values.get("n") is None:
                raise ConfigError("give --d and --n (or a RUN_DIR)")
            _check_used({**given, "replicates": replicates}, flow_only)
            defaults = {"optimizer": "sgd", "lr_schedule": "constant", "batch": DEFAULT_BATCH,
                        "log_every": max(1, (values.get("steps") or 1) // LOGGED_TIMES)}
            for name, default in defaults.items():
                values[name] = default if values.get(name) is None else values[name]
            config = config_from_options(dict(values), registries)
            data = run_dynamics(config, out or f"dynamics-{config.hash()}", flow_only,
                                DEFAULT_REPLICATES if replicates is None else replicates,
                                progress=not quiet)
        click.echo(json.dumps(data, allow_nan=False) if as_json else format_summary(data))

    visible, hidden = run_sections(registries, "lsa", family)
    options = [
        click.argument("run_dir", required=False, type=click.Path(file_okay=False)),
        click.option("--model", default=None, hidden=True),
        *declared_options(visible),
        *declared_options(hidden, hidden=True, skip=visible),
        click.option("--flow-only", is_flag=True, help="The exact flow only, no SGD."),
        click.option("--replicates", type=int, default=None,
                     help=f"Independent SGD runs from the same start (the standard error) "
                          f"[default: {DEFAULT_REPLICATES}]."),
        click.option("--json", "as_json", is_flag=True, help="Print dynamics.json's content."),
        click.option("--quiet", is_flag=True, help="No progress bars."),
        click.option("--out", type=click.Path(file_okay=False), default=None,
                     help="Output folder."),
    ]
    command = click.command("dynamics")(apply_options(dynamics_command, options))
    for param in command.params:   # d and n come from the run with RUN_DIR
        if param.name in ("d", "n"):
            param.required = False
    return command
