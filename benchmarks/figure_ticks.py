"""Seconds per figure with mathtext tick labels (matplotlib's default) and with plain ones.

    python benchmarks/figure_ticks.py [--figures 20] [--rounds 3] [--json]

Draws ``--figures`` copies of a report figure with log axes (the w-scale growth against n,
``iclab.studies.shift.growth.growth_over_n_figure``) into a temporary folder, once as iclab
draws it (``iclab.utils.plain_ticks.plain_log_ticks``: plain-text labels) and once with that
step skipped (matplotlib's mathtext labels, parsed again by every figure's new renderer); the
two take turns ``--rounds`` times after one untimed figure each. Prints the median seconds per
figure of each, their ratio and how many mathtext strings each parsed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from matplotlib.mathtext import MathTextParser

import iclab.studies.shift.growth as shift_growth
from iclab.utils.plain_ticks import plain_log_ticks

NS = (10, 20, 40, 80, 160, 320, 640, 1280)
PARSES = [0]


def _counting_parse(real: Any) -> Any:
    def parse(self: MathTextParser, *args: Any, **kwargs: Any) -> Any:
        PARSES[0] += 1
        return real(self, *args, **kwargs)
    return parse


def draw(folder: Path, count: int, plain: bool) -> tuple[float, int]:
    """(seconds per figure, mathtext parses) for ``count`` figures."""
    shift_growth.plain_log_ticks = plain_log_ticks if plain else (lambda figure: None)  # type: ignore[attr-defined]
    exact = [12.9 / (1 + n / 200) for n in NS]
    trained = {20: [12.5, 13.1]}
    PARSES[0] = 0
    started = time.perf_counter()
    for index in range(count):
        shift_growth.growth_over_n_figure(NS, exact, trained, 4.0, folder / f"f{index}.png")
    return (time.perf_counter() - started) / count, PARSES[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    MathTextParser.parse = _counting_parse(MathTextParser.parse)  # type: ignore[method-assign]
    times: dict[str, list[float]] = {"mathtext": [], "plain": []}
    parses: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        draw(folder, 1, False), draw(folder, 1, True)  # fonts, caches, imports
        for _ in range(args.rounds):
            for name in ("mathtext", "plain"):
                seconds, parsed = draw(folder, args.figures, name == "plain")
                times[name].append(seconds)
                parses[name] = parsed
    median = {name: statistics.median(values) for name, values in times.items()}
    ratio = median["mathtext"] / median["plain"]
    for name in ("mathtext", "plain"):
        print(f"{name:>8}: {1000 * median[name]:.1f} ms per figure, "
              f"{parses[name]} mathtext parses for {args.figures} figures")
    print(f"ratio mathtext / plain: {ratio:.3f}")
    if args.json:
        print(json.dumps({"mathtext_seconds": median["mathtext"],
                          "plain_seconds": median["plain"], "ratio": ratio,
                          "mathtext_parses": parses["mathtext"],
                          "plain_parses": parses["plain"]}))


if __name__ == "__main__":
    main()
