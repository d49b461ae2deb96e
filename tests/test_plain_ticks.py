"""Log-axis tick labels as plain text: no mathtext parsed when a report figure is drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from matplotlib.mathtext import MathTextParser

import iclab.studies.shift.growth as shift_growth
from iclab.utils.plain_ticks import plain_text


@pytest.mark.parametrize(("label", "plain"), [
    ("$\\mathdefault{10^{-2}}$", "10⁻²"),
    ("$\\mathdefault{10^{0}}$", "10⁰"),
    ("$\\mathdefault{10^{13}}$", "10¹³"),
    ("$\\mathdefault{2\\times10^{4}}$", "2×10⁴"),
    ("$\\mathdefault{3\\times10^{-1}}$", "3×10⁻¹"),
    ("0.5", "0.5"),
    ("", ""),
])
def test_mathtext_tick_labels_become_plain_text(label: str, plain: str) -> None:
    assert plain_text(label) == plain


def test_a_log_log_figure_parses_no_mathtext(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real = MathTextParser.parse

    def counting(self: MathTextParser, text: str, *args: Any, **kwargs: Any) -> Any:
        parsed.append(text)
        return real(self, text, *args, **kwargs)

    monkeypatch.setattr(MathTextParser, "parse", counting)

    def draw(name: str) -> None:
        shift_growth.growth_over_n_figure((10, 100, 1000), [9.0, 4.0, 1.5], {10: [8.5]}, 4.0,
                                          tmp_path / name)
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"

    draw("plain.png")
    assert parsed == []
    monkeypatch.setattr(shift_growth, "plain_log_ticks", lambda figure: None)
    draw("mathtext.png")  # matplotlib's own labels: mathtext, parsed while drawing
    assert any("mathdefault" in text for text in parsed)
