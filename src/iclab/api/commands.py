"""``iclab.theory``, ``iclab.certify``, ``iclab.shift`` and ``iclab.dynamics``: the commands
run in this process with the same options (keywords by the options' names), their JSON
output returned as typed results."""

from __future__ import annotations

import os
import textwrap
import types
from pathlib import Path
from typing import Any

from iclab.api.invoke import command_of, run_command
from iclab.api.options import command_options_doc
from iclab.api.results import CertifyResult, CommandResult, TheoryResult
from iclab.experiments.registries import Registries


def theory(*, registries: Registries | None = None, **options: Any) -> TheoryResult:
    """The optimal one-layer LSA of a task family, as ``iclab theory --json``: Gamma*, eta*,
    its loss and the Bayes risk (``TheoryResult``; ``result`` holds every key, the studies'
    modes' and additions' included). The keywords are the options of ``iclab theory``."""
    return TheoryResult.of(run_command("theory", registries, options))


def certify(run_dir: str | os.PathLike[str], *, registries: Registries | None = None,
            **options: Any) -> CertifyResult:
    """How far the finished run in ``run_dir`` is above the span bound of every LSA, as
    ``iclab certify --json`` (``CertifyResult``: the verdict sentence, bound, z)."""
    return CertifyResult.of(run_command("certify", registries,
                                        {"run_dir": os.fspath(run_dir), **options}))


def shift(run_dir: str | os.PathLike[str], *, registries: Registries | None = None,
          **options: Any) -> CommandResult:
    """The finished run in ``run_dir`` under shifted test laws, as ``iclab shift --json``
    (the shift study's command); ``values`` may be a list. Returns shift.json's content and
    the folder of shift.json, shift.csv and shift.png."""
    data = run_command("shift", registries, {"run_dir": os.fspath(run_dir), **options})
    out = options.get("out")
    folder = Path(out) if out is not None else Path(run_dir) / f"shift-{options.get('kind')}"
    return CommandResult(data, folder, _figure(folder, "shift.png"))


def dynamics(run_dir: str | os.PathLike[str] | None = None, *,
             registries: Registries | None = None, **options: Any) -> CommandResult:
    """SGD beside the exact gradient flow, as ``iclab dynamics --json`` (the dynamics study's
    command): dynamics.json's content and, where ``out`` or ``run_dir`` names it, the folder
    of dynamics.json, dynamics.csv and dynamics.png."""
    given = {"run_dir": None if run_dir is None else os.fspath(run_dir), **options}
    data = run_command("dynamics", registries, given)
    out = options.get("out")
    folder = Path(out) if out is not None else (
        Path(run_dir) / "dynamics" if run_dir is not None else None)
    return CommandResult(data, folder, _figure(folder, "dynamics.png"))


def _figure(folder: Path | None, name: str) -> Path | None:
    return folder / name if folder is not None and (folder / name).is_file() else None


def document(registries: Registries) -> None:
    """Add each command's option list (from its click parameters, themselves generated from
    the declarations) to its function's docstring; a study's command absent from
    ``registries`` is noted instead."""
    for function, name in ((theory, "theory"), (certify, "certify"), (shift, "shift"),
                           (dynamics, "dynamics")):
        try:
            listed = command_options_doc(command_of(name, registries))
        except Exception:
            listed = f"\n(iclab {name} is not among the installed studies' commands)"
        function.__doc__ = (function.__doc__ or "") + "\n" + textwrap.indent(listed, "    ") + "\n"


class TheoryPackage(types.ModuleType):
    """The package ``iclab.theory`` (the optima's formulas), callable as the API's
    ``theory`` so that ``iclab.theory(d=5, n=20)`` works whichever was imported first."""

    def __call__(self, *, registries: Registries | None = None,
                 **options: Any) -> TheoryResult:
        return theory(registries=registries, **options)


def callable_theory_package() -> None:
    """Make the package ``iclab.theory`` callable (``TheoryPackage``): the name
    ``iclab.theory`` is both the package and the API's function."""
    import iclab.theory as package

    package.__class__ = TheoryPackage
