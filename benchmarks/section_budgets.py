"""CPU seconds each section of a reproduce set uses, beside its declared budget.

    python benchmarks/section_budgets.py DIR [--markdown]
    python benchmarks/section_budgets.py --run quick|default [--markdown]

Reads DIR/section_times.json, which every ``iclab sweep`` / ``iclab reproduce`` writes (or first
runs ``iclab reproduce [--quick]`` into a temporary folder with ``--run``), and prints one row per
section: its runs and their CPU seconds in the workers (each run counted in the first section
that reads it), the driver's seconds (claims, figures, measurements, one after the other),
the budgets the spec declares, and the wall seconds the budgets allow on 2 cores
(``iclab.experiments.specs.budgets.wall_bound``). ``--markdown`` prints the table as
benchmarks/README.md holds it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from iclab.experiments.specs.budgets import SectionBudget, wall_bound


def rows_of(folder: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((folder / "section_times.json").read_text())[
        "sections"]
    return rows


def table(rows: list[dict[str, Any]], name: str) -> str:
    lines = ["| set | section | runs | runs CPU s | longest run CPU s | driver s | budget runs / "
             "longest / driver |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        budget = row["budget"]
        declared = "-" if budget is None else \
            f"{budget['runs']:g} / {budget['longest']:g} / {budget['driver']:g}"
        lines.append(f"| {name} | {row['section']} | {row['runs']} | "
                     f"{row['runs_cpu_seconds']:.1f} | {row['longest_run_cpu_seconds']:.1f} | "
                     f"{row['driver_seconds']:.1f} | {declared} |")
    measured = {row["section"]: SectionBudget(row["runs_cpu_seconds"],
                                              row["longest_run_cpu_seconds"],
                                              row["driver_seconds"]) for row in rows}
    lines.append(f"\nMeasured, the sections come to {wall_bound(measured, 2):.0f} s by the "
                 f"budgets' rule on 2 cores.")
    if all(row["budget"] is not None for row in rows):
        budgets = {row["section"]: SectionBudget(**row["budget"]) for row in rows}
        lines.append(f"The budgets allow {wall_bound(budgets, 2):.0f} s.")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", nargs="?", type=Path)
    parser.add_argument("--run", choices=("quick", "default"))
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    if (args.folder is None) == (args.run is None):
        parser.error("give a reproduce folder or --run quick|default")
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.folder
        if args.run is not None:
            folder = Path(scratch) / "reproduce"
            quick = ["--quick"] if args.run == "quick" else []
            subprocess.run([sys.executable, "-m", "iclab.cli.main", "reproduce", *quick,
                            "--out", str(folder), "--quiet"], check=False)
        rows = rows_of(folder)
        name = args.run or folder.name
        print(table(rows, name) if args.markdown else json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
