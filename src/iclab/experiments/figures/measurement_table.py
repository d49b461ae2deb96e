"""A measurement of the report: a table (header and rows of strings) and its figure, shown
under "Measurements (not claims)" in report.md and report.html; the kind that makes the
measurement builds it (``ClaimKind.report_measurement``)."""

from __future__ import annotations

import html
from dataclasses import dataclass

HEADING = "Measurements (not claims)"


@dataclass(frozen=True)
class Measurement:
    """A measurement's table (header and rows of strings) and figure file (in the sweep
    folder)."""

    section: str
    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    figure: str
    caption: str

    def markdown(self) -> list[str]:
        lines = [f"### {HEADING}: {self.title}", "", f"![{self.caption}]({self.figure})", "",
                 f"*{self.caption}*", "", "| " + " | ".join(self.header) + " |",
                 "|" + "---|" * len(self.header)]
        return lines + ["| " + " | ".join(row) + " |" for row in self.rows] + [""]

    def html(self, image: str) -> list[str]:
        esc = html.escape
        parts = [f"<h3>{esc(HEADING)}: {esc(self.title)}</h3>",
                 f"<figure><img alt='{esc(self.caption)}' src='{image}'>"
                 f"<figcaption>{esc(self.caption)}</figcaption></figure>",
                 "<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in self.header) + "</tr>"]
        parts += ["<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>"
                  for row in self.rows]
        return [*parts, "</table>"]
