"""A figure of the report: the PNG file a claim kind drew into the sweep folder, and where it
goes (``iclab.experiments.report``). This module does not import matplotlib."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FigureFile:
    """A figure written to the sweep folder (``name``, a file name there), with the report
    section it belongs to and its caption."""

    section: str
    name: str
    caption: str


def indexed_name(stem: str, index: int, count: int) -> str:
    """``stem``, with ``_index`` when a group draws ``count`` > 1 such figures."""
    return stem if count == 1 else f"{stem}_{index}"


def section_file_name(section: str, suffix: str) -> str:
    """A file name from a section's title: lower case, non-alphanumerics as '_'."""
    return "".join(c if c.isalnum() else "_" for c in section.lower()) + suffix
