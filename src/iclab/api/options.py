"""Keyword options of the Python API checked as the command line checks them, and the option
lists of its docstrings, generated from the same declarations (``iclab.utils.fields`` for
``iclab.train``; the click commands, themselves generated from them, for the others)."""

from __future__ import annotations

import dataclasses
import os
import textwrap
from typing import Any

import click

from iclab.cli.run_options import ConfigRegistries, run_sections
from iclab.config.sections import MODEL_KEY
from iclab.utils.errors import ConfigError
from iclab.utils.fields import FieldInfo, check_value, default_of, field_infos


def declared_infos(registries: ConfigRegistries, model: str | None, family: str | None
                   ) -> tuple[dict[str, FieldInfo], set[str]]:
    """name -> declaration of the chosen model's and family's run options, and the names of
    every run option (other models' and families' too, hidden on the command line)."""
    visible, hidden = run_sections(registries, model, family)
    infos = {name: info for cls, _ in visible
             for name, (_, info) in field_infos(cls).items() if info.cli}
    names = {name for cls, _ in hidden for name, (_, info) in field_infos(cls).items()
             if info.cli}
    return infos, names | set(infos)


def check_run_options(options: dict[str, Any], registries: ConfigRegistries) -> dict[str, Any]:
    """``options`` as the command line's values (None = not given), each given value of the
    chosen model and family checked against its declaration first (so ``d=0`` is refused
    by its own line whatever else is missing); ConfigError with one line for a name that is
    no option. Another model's or family's option is refused by ``config_from_options``,
    with the line naming its owner, as on the command line."""
    model = options.get(MODEL_KEY)
    family = options.get("family")
    if model is not None and not isinstance(model, str):
        raise ConfigError(f"model must be a string (a model's name), got {model!r}")
    if family is not None and not isinstance(family, str):
        raise ConfigError(f"family must be a string (a family's name), got {family!r}")
    infos, names = declared_infos(registries, model, family)
    for name, value in options.items():
        if name == MODEL_KEY:
            continue
        if name not in names:
            raise ConfigError(f"no such option: {name} (help(iclab.train) lists them)")
        info = infos.get(name)
        if info is None or value is None:
            continue
        if info.kind == "matrix":
            if not isinstance(value, str | os.PathLike):
                raise ConfigError(f"{name} must be the path of a .npy file, got {value!r}")
            options = {**options, name: os.fspath(value)}
        else:
            check_value(name, value, info)
    return dict(options)


def _entry(name: str, text: str, default: Any = None) -> str:
    shown = "" if default is None else f" [default: {default!r}]"
    return textwrap.fill(f"{name}: {' '.join(text.split())}{shown}", width=92,
                         initial_indent="    ", subsequent_indent="        ")


def _fields(sections: list[tuple[type, str]]) -> dict[str, tuple[FieldInfo, Any]]:
    """name -> (declaration, default or None) of the command-line fields of ``sections``."""
    out: dict[str, tuple[FieldInfo, Any]] = {}
    for cls, _ in sections:
        for name, (f, info) in field_infos(cls).items():
            default = default_of(f)
            if info.cli and name not in out:
                out[name] = (info, None if default is dataclasses.MISSING else default)
    return out


def run_options_doc(registries: ConfigRegistries) -> str:
    """The option list of ``iclab.train``: every declared option of the task, optimiser and
    run sections, then each model's and each family's own, each with its owner and default
    (a family's option under the name it takes beside a model with a same-named option)."""
    core = _fields(run_sections(registries, "", None)[0])
    blocks: list[tuple[str, list[str]]] = [
        ("Options", [_entry(name, info.help, default)
                     for name, (info, default) in core.items()])]
    for model in registries.models.models():
        own = _fields([(model.options_class, "")])
        blocks.append((f"Options of model {model.name} (with model={model.name!r})",
                       [_entry(name, info.help, default) for name, (info, default)
                        in own.items()]))
    for family in registries.families.names:
        plain = _fields(run_sections(registries, "", family, fixed=False)[0][:1])
        entries = [_entry(name, info.help, default) for name, (info, default)
                   in plain.items() if name not in core]
        for model in registries.models.models():
            beside = _fields(run_sections(registries, model.name, family, fixed=False)[0][:1])
            entries += [_entry(name, f"{info.help} (its name beside model={model.name!r})",
                               default) for name, (info, default) in beside.items()
                        if name not in plain and name not in core]
        blocks.append((f"Options of family {family} (with family={family!r})", entries))
    lines: list[str] = []
    for title, entries in blocks:
        if entries:
            lines += ["", f"{title}:", *dict.fromkeys(entries)]
    return "\n".join(lines)


def command_options_doc(command: click.Command) -> str:
    """The option list of a command's function: its click parameters, named as keywords."""
    lines = ["", "Options:"]
    for param in command.params:
        if isinstance(param, click.Option) and param.hidden:
            continue
        name = keyword_of(param)
        if name in ("as_json", "json"):
            continue
        if isinstance(param, click.Option):
            text = param.help or f"the command's {param.opts[0]}"
        else:
            text = f"the positional argument {(param.name or '').upper()}"
        shown = isinstance(param, click.Option) and param.show_default is True
        default = param.default if shown and isinstance(param.default, int | float | str) \
            and not isinstance(param.default, bool) else None
        lines.append(_entry(name, text, default))
    return "\n".join(lines)


def keyword_of(param: click.Parameter) -> str:
    """A parameter's keyword in the API: the long option's name with underscores
    (``--fit-prompts`` -> fit_prompts), an argument's own name."""
    if isinstance(param, click.Argument):
        return param.name or ""
    long = [opt for opt in param.opts if opt.startswith("--")]
    return (long[0] if long else param.opts[0]).lstrip("-").replace("-", "_")
