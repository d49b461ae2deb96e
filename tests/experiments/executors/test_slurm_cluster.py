"""A real single-node SLURM (scripts/slurm-single-node.sh: Debian's slurm-wlm and munge):
``iclab sweep --executor slurm`` gives the local executor's results.csv, byte for byte. Runs
only as root where slurmctld, slurmd and munged are installed (the script starts them and
stops them after); skipped where they cannot start."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "slurm-single-node.sh"


@pytest.mark.slow
def test_a_single_node_slurm_gives_the_local_results() -> None:
    pytest.importorskip("submitit")
    if os.geteuid() != 0 or not all(shutil.which(name) for name in
                                    ("slurmctld", "slurmd", "munged", "sbatch")):
        pytest.skip("needs root and slurm-wlm and munge installed")
    completed = subprocess.run(["bash", str(SCRIPT), sys.executable], capture_output=True,
                               text=True, timeout=600, check=False)
    if completed.returncode == 2:
        pytest.skip(completed.stderr.strip().splitlines()[-1])
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "results.csv identical (byte for byte)" in completed.stdout
