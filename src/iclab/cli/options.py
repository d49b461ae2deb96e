"""Command-line options generated from the config declarations (``iclab.utils.fields``).

Every declared field of the run's sections and of each model's options becomes one option
(``key_dim`` -> ``--key-dim``); booleans become ``--flag/--no-flag``; matrices are read from
``.npy`` files. Every generated option defaults to "not given" (None), so the command knows
what the user set, and the help shows the declared default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

import click

from iclab.utils.fields import FieldInfo, default_of, field_infos


def flag_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def _help(info: FieldInfo, default: Any, extra: str = "") -> str:
    text = info.help + extra
    if default is not None and info.kind != "matrix":
        shown = str(default).lower() if isinstance(default, bool) else default
        text += f" [default: {shown}]"
    return text


def _option(name: str, info: FieldInfo, default: Any, extra: str,
            hidden: bool = False) -> Callable[..., Any]:
    help_text = _help(info, default, extra)
    if info.kind == "bool":
        dashed = name.replace("_", "-")
        return click.option(f"--{dashed}/--no-{dashed}", name, default=None, help=help_text,
                            hidden=hidden)
    if info.kind == "matrix":
        return click.option(flag_name(name), name, type=click.Path(dir_okay=False),
                            default=None, help=help_text, hidden=hidden)
    kind: Any = {"int": int, "float": float, "str": str}[info.kind]
    if default is None and not info.nullable and not hidden:  # a required field
        return click.option(flag_name(name), name, type=kind, required=True, help=help_text)
    return click.option(flag_name(name), name, type=kind, default=None, help=help_text,
                        hidden=hidden)


def declared_options(sections: Iterable[tuple[type, str]], hidden: bool = False,
                     skip: Iterable[tuple[type, str]] = ()) -> list[Callable[..., Any]]:
    """One click option per declared field of each (section class, note) pair; a field
    declared by several sections becomes one option; fields of ``skip``'s sections are left
    out; ``hidden`` options parse but are not listed in --help."""
    seen: dict[str, Callable[..., Any]] = {}
    taken = {name for cls, _ in skip for name in field_infos(cls)}
    for cls, note in sections:
        for name, (f, info) in field_infos(cls).items():
            if not info.cli or name in seen or name in taken:
                continue
            default = default_of(f)
            shown = None if default is dataclasses.MISSING else default
            seen[name] = _option(name, info, shown, note, hidden)
    return list(seen.values())


def apply_options(command: Callable[..., Any], options: list[Callable[..., Any]]
                  ) -> Callable[..., Any]:
    for option in reversed(options):
        command = option(command)
    return command
