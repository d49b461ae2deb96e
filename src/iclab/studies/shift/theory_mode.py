"""``iclab theory --shift KIND --values V1,...``: the optimal LSA's exact loss under shifted
test laws, as text or JSON (``iclab.studies.shift.optimum``), added to the one-layer
optimum's output (a ``TheoryAddition``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from iclab.cli.theory.modes import TheoryAddition
from iclab.studies.shift.laws import SHIFT_KINDS, check_kind, parse_values
from iclab.studies.shift.optimum import ShiftedOptimumRow, shift_base, shifted_optimum_rows
from iclab.tasks.base import TaskFamily
from iclab.utils.errors import ConfigError

ShiftRequest = tuple[str, tuple[float, ...]]
"""(the shift kind, its values)."""


def _number(value: float | None, digits: str = ".6g") -> str:
    return "-" if value is None else format(value, digits)


def format_shift_rows(kind: str, rows: Sequence[ShiftedOptimumRow]) -> str:
    """A table: one line per value with the LSA's exact loss, the Bayes loss of the test law
    (± its standard error) and their ratio."""
    header = (f"{kind}", "optimal LSA loss", "Bayes loss of the test law", "ratio")
    lines = []
    for row in rows:
        bayes = _number(row.bayes_loss)
        if row.bayes_loss is not None and row.bayes_loss_stderr:
            bayes += f" ± {row.bayes_loss_stderr:.2g}"
        lines.append((f"{row.value:g}", _number(row.lsa_loss), bayes, _number(row.ratio)))
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(4)]
    text = [f"under the {kind} shift (the training law's optimal LSA, exact; Bayes: Monte "
            "Carlo):"]
    for line in [header, *lines]:
        text.append("  " + "  ".join(cell.rjust(width) for cell, width in zip(line, widths,
                                                                               strict=True)))
    return "\n".join(text)


def shift_rows_json(kind: str, rows: Sequence[ShiftedOptimumRow]) -> dict[str, Any]:
    """{"shift": kind, "rows": [{value, lsa_loss, bayes_loss, bayes_loss_stderr, ratio}]}."""
    return {"shift": kind, "rows": [row.to_json() for row in rows]}


def shift_options() -> list[Callable[[Any], Any]]:
    """--shift and --values."""
    return [
        click.option("--shift", type=str, default=None,
                     help="Also this optimal LSA under shifted test laws: "
                          f"{', '.join(SHIFT_KINDS)} (as iclab shift; linear Gaussian "
                          "families)."),
        click.option("--values", type=str, default=None,
                     help="With --shift: the shifted values, comma-separated (\"1,2,4\")."),
    ]


def take_shift(options: dict[str, Any]) -> ShiftRequest | None:
    """Pop --shift and --values; the checked (kind, values), or None when neither is given."""
    kind, values = options.pop("shift", None), options.pop("values", None)
    if kind is None and values is None:
        return None
    if kind is None or values is None:
        raise ConfigError("--shift and --values go together: --shift KIND --values V1,V2,...")
    return kind, tuple(parse_values(check_kind(kind), str(values)))


def check_shift(request: ShiftRequest, task: TaskFamily) -> None:
    """A linear Gaussian training law, before any work."""
    shift_base(task)


def run_shift(request: ShiftRequest, task: TaskFamily, bayes_prompts: int,
              seed: int) -> tuple[str, dict[str, Any]]:
    """The rows as text and as JSON keys."""
    kind, values = request
    rows = shifted_optimum_rows(task, kind, list(values), bayes_prompts, seed)
    return format_shift_rows(kind, rows), shift_rows_json(kind, rows)


SHIFT_ADDITION = TheoryAddition("shift", shift_options, take_shift, check_shift, run_shift)
