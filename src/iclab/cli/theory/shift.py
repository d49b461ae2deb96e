"""``iclab theory --shift``: the optimal LSA's exact loss under shifted test laws, as text or
JSON (``iclab.theory.shifted_optimum``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from iclab.theory.shifted_optimum import ShiftedOptimumRow


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
