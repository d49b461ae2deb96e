"""The figure of a shift claim: the shift.png of a site's first seed's shift evaluation,
copied into the sweep folder."""

from __future__ import annotations

from pathlib import Path

from iclab.experiments.figures.figure_file import FigureFile, indexed_name
from iclab.experiments.figures.groups import copy_file, where_text
from iclab.experiments.specs.results import Site


def shift_figure(section: str, group: str, site: Site, index: int, count: int, kind: str,
                 folder: Path, model: str, prompts: int, exact: bool, taken: set[str],
                 out_dir: Path) -> FigureFile:
    """The shift.png of ``folder`` (the site's first seed's shift evaluation) copied into
    the sweep folder under a name not in ``taken`` (which it joins)."""
    record = site.records[0]
    name = indexed_name(f"{group}_shift_{kind}", index, count)
    if f"{name}.png" in taken:  # same kind, other values
        name += f"_{folder.name.rsplit('-', 1)[-1]}"
    taken.add(f"{name}.png")
    copy_file(folder / "shift.png", out_dir / f"{name}.png")
    line = " (line: exact)" if exact else ""
    return FigureFile(section, f"{name}.png", (
        f"{where_text(group, site)}, seed {record.point.config.run.seed}, {kind} shift: test "
        f"loss of the trained {model} model{line} beside OLS, ridge, one-step GD with Gamma* "
        f"and the Bayes predictor of the test law ({prompts} prompts per value, bars 2 se); "
        f"runs/{record.point.run_id}/{folder.name}/."))
