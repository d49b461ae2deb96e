"""``iclab.sweep`` and ``iclab.reproduce``: a spec's runs, claims and report, as the commands
make them (run in this process, quiet by default), returned as a ``SweepResult``."""

from __future__ import annotations

import contextlib
import os
import textwrap
from pathlib import Path
from typing import Any

from iclab.api.invoke import command_of, run_command
from iclab.api.options import command_options_doc
from iclab.api.results import SweepResult
from iclab.experiments.claims.kind import ClaimsNotHeldError
from iclab.experiments.registries import Registries


def sweep(spec: str | os.PathLike[str], *, out: str | os.PathLike[str],
          registries: Registries | None = None, quiet: bool = True,
          **options: Any) -> SweepResult:
    """Run every point of the spec file ``spec`` into ``out`` (finished runs skipped), as
    ``iclab sweep``, and return results.csv's rows and the claims' verdicts (a claim that
    does not hold is ``all_hold`` False, not an error; a failed run raises ``iclab.Error``).
    """
    given = {"spec": os.fspath(spec), "out": os.fspath(out), "quiet": quiet, **options}
    return _run("sweep", registries, given, Path(out))


def reproduce(*, quick: bool = False, out: str | os.PathLike[str] | None = None,
              registries: Registries | None = None, quiet: bool = True,
              **options: Any) -> SweepResult:
    """The paper's claims, as ``iclab reproduce`` (``quick``: the smaller set), into ``out``
    (default runs/reproduce or runs/reproduce-quick); the verdicts as a ``SweepResult``."""
    folder = Path(out) if out is not None else Path(
        "runs/reproduce-quick" if quick else "runs/reproduce")
    given = {"quick": quick, "out": os.fspath(folder), "quiet": quiet, **options}
    return _run("reproduce", registries, given, folder)


def _run(name: str, registries: Registries | None, given: dict[str, Any],
         folder: Path) -> SweepResult:
    with contextlib.suppress(ClaimsNotHeldError):  # the result says which claims fail
        run_command(name, registries, given, as_json=False)
    return SweepResult.of(folder)


def document(registries: Registries) -> None:
    """Add each command's option list (its click parameters) to its function's docstring."""
    for function, name in ((sweep, "sweep"), (reproduce, "reproduce")):
        listed = command_options_doc(command_of(name, registries))
        function.__doc__ = (function.__doc__ or "") + "\n" + textwrap.indent(listed, "    ") + "\n"
