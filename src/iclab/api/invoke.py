"""Running one of the command line's commands in this process from keyword options: the same
options, checks and one-line errors (raised as ``iclab.Error``), its JSON output read back
instead of printed."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Sequence
from typing import Any

import click

from iclab.cli.main import build_cli
from iclab.experiments.registries import Registries
from iclab.utils.errors import ConfigError


def command_of(name: str, registries: Registries, args: Sequence[str] = ()) -> click.Command:
    """The ``iclab NAME`` command of ``registries`` (a study's command included), built for
    ``args`` as on the command line; ConfigError if no study of ``registries`` adds it."""
    group = build_cli([name, *args], registries)
    command: click.Command | None = group.commands.get(name)
    if command is None:
        raise ConfigError(f"iclab {name}: no such command among the studies of these "
                          f"registries; allowed: {', '.join(sorted(group.commands))}")
    return command


def arguments(command: click.Command, options: dict[str, Any]) -> list[str]:
    """The command-line arguments of keyword ``options`` (None = not given; a list or tuple:
    comma-separated; True/False: the flag or its ``--no-`` form); ConfigError naming a keyword
    the command does not have."""
    from iclab.api.options import keyword_of

    params = {keyword_of(param): param for param in command.params}
    positional: list[str] = []
    flags: list[str] = []
    for name, value in options.items():
        param = params.get(name)
        if param is None:
            allowed = ", ".join(sorted(k for k, p in params.items()
                                       if not (isinstance(p, click.Option) and p.hidden)))
            raise ConfigError(f"iclab {command.name}: no such option {name!r}; allowed: "
                              f"{allowed}")
        if value is None:
            continue
        if isinstance(param, click.Argument):
            positional.append(str(value))
        elif isinstance(param, click.Option) and param.is_flag:
            if not isinstance(value, bool):
                raise ConfigError(f"{param.opts[0]} must be True or False, got {value!r}")
            if value:
                flags.append(param.opts[0])
            elif param.secondary_opts:
                flags.append(param.secondary_opts[0])
        else:
            text = ",".join(str(v) for v in value) if isinstance(value, list | tuple) \
                else str(value)
            flags += [next(opt for opt in param.opts if opt.startswith("--")), text]
    return [*positional, *flags]


def run_command(name: str, registries: Registries | None, options: dict[str, Any],
                as_json: bool = True) -> Any:
    """Run ``iclab NAME`` with ``options`` (with ``--json`` where ``as_json``) and return
    what it printed: the JSON object, or the text. The command's one-line errors propagate
    as ``iclab.Error``; click's (an unknown choice, say) become ConfigError with its line."""
    registries = Registries() if registries is None else registries
    first = command_of(name, registries)
    if any(param.name == "quiet" for param in first.params):
        options = {"quiet": True, **options}  # no progress bars unless asked for
    probe = arguments(first, options)
    command = command_of(name, registries, probe)  # built for its --family, as the CLI does
    args = [*arguments(command, options), *(["--json"] if as_json else [])]
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            command.main(args=args, prog_name=f"iclab {name}", standalone_mode=False,
                         obj=registries)
    except click.UsageError as error:
        raise ConfigError(f"iclab {name}: {error.format_message()}") from None
    except click.ClickException as error:
        raise ConfigError(error.format_message()) from None
    text = printed.getvalue()
    return json.loads(text) if as_json else text
