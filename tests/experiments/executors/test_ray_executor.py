"""The Ray executor: a tiny sweep on a local Ray instance gives the local executor's results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from iclab.experiments.executors.local import RunTask, execute_run
from iclab.experiments.registries import Registries
from iclab.experiments.specs.spec import parse_spec
from iclab.experiments.specs.sweep import make_executor, run_sweep

ray = pytest.importorskip("ray")

TINY = {"name": "tiny", "defaults": {"d": 2, "steps": 20, "batch": 64, "eval_prompts": 200},
        "groups": [{"name": "a", "seeds": [0, 1], "n": [4, 8], "sigma": 0.5}]}


class InProcess:
    """The local executor's work, in this process (no worker start-up)."""

    def run(self, tasks: list[RunTask], on_done: Any) -> None:
        for task in tasks:
            on_done(execute_run(task))


def test_ray_sweep_matches_the_local_executor_and_stops_its_instance(tmp_path: Path) -> None:
    spec = parse_spec(TINY, "tiny", Registries())
    run_sweep(spec, tmp_path / "local", InProcess(), progress=False)
    run_sweep(spec, tmp_path / "ray", make_executor("ray", workers=2), progress=False)
    assert not ray.is_initialized()  # the local instance was stopped
    assert (tmp_path / "ray" / "results.csv").read_bytes() == \
        (tmp_path / "local" / "results.csv").read_bytes()

