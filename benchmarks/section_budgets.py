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
    lines = ["| set | section | runs | runs CPU s (measured) | driver s (measured) | "
             "budget runs / driver |", "| --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        budget = ("-" if row["budget_runs_cpu_seconds"] is None else
                  f"{row['budget_runs_cpu_seconds']:g} / {row['budget_driver_cpu_seconds']:g}")
        lines.append(f"| {name} | {row['section']} | {row['runs']} | "
                     f"{row['runs_cpu_seconds']:.1f} | {row['driver_cpu_seconds']:.1f} | "
                     f"{budget} |")
    declared = {row["section"]: SectionBudget(row["budget_runs_cpu_seconds"] or 0.0,
                                              row["budget_driver_cpu_seconds"] or 0.0)
                for row in rows}
    lines.append(f"\nThe budgets allow {wall_bound(declared, 2):.0f} s of wall time on 2 cores.")
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
