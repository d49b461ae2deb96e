"""Log-axis tick labels without mathtext, so drawing a figure does not set mathtext up again.

Matplotlib labels a log axis with ``LogFormatterSciNotation``: "$\\mathdefault{10^{-2}}$", a
mathtext string. Each figure draws with a new Agg renderer, which brings its own mathtext
parser whose cache starts empty, so every label of every figure is parsed, laid out and its
fonts set up again (``benchmarks/figure_ticks.py`` measures the cost). ``plain_log_ticks``
gives a figure's log axes ``PlainLogFormatter`` instead: the same ticks and labels written
as plain text, "10" with a Unicode superscript exponent (10⁻²), "2×10⁴"; no text of the
figure is mathtext. Imported only by the code that draws figures.
"""

from __future__ import annotations

import re

from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatterMathtext, LogFormatterSciNotation

SUPERSCRIPTS = str.maketrans("-−0123456789", "⁻⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
_MATH = re.compile(r"^\$\\mathdefault\{(.*)\}\$$")
_EXPONENT = re.compile(r"\^\{([^{}]*)\}")


def plain_text(label: str) -> str:
    """A mathtext tick label of the log formatters as plain text ("$\\mathdefault{2\\times
    10^{-2}}$" -> "2×10⁻²"); any other text as it is."""
    match = _MATH.match(label)
    if match is None:
        return label
    body = match.group(1).replace("\\times", "×").replace("\\cdot", "·")
    body = _EXPONENT.sub(lambda exponent: exponent.group(1).translate(SUPERSCRIPTS), body)
    return body.replace("{", "").replace("}", "")


class PlainLogFormatter(LogFormatterSciNotation):
    """``LogFormatterSciNotation``'s labels (the same ticks) as plain text (``plain_text``)."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        return plain_text(str(super().__call__(x, pos)))


def plain_log_ticks(figure: Figure) -> None:
    """Give every log axis of ``figure`` whose labels are mathtext ``PlainLogFormatter``s with
    the same base, the same labelled ticks and the same minor-label thresholds."""
    for axes in figure.axes:
        for axis in (axes.xaxis, axes.yaxis):
            for minor in (False, True):
                old = axis.get_minor_formatter() if minor else axis.get_major_formatter()
                if not isinstance(old, LogFormatterMathtext) \
                        or isinstance(old, PlainLogFormatter):
                    continue
                state = vars(old)
                new = PlainLogFormatter(state["_base"], labelOnlyBase=old.labelOnlyBase,
                                        minor_thresholds=old.minor_thresholds,
                                        linthresh=state["_linthresh"])
                if minor:
                    axis.set_minor_formatter(new)
                else:
                    axis.set_major_formatter(new)
