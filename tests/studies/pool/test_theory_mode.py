"""``--tasks``, ``--task-pool`` and ``--pretrain-prompts`` through the CLI: bad pools refused
(one line, exit 2, nothing written; hypothesis), the theory's JSON."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from iclab.cli.main import main
from tests.cli.test_bad_input import SETTINGS, assert_refused


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


@SETTINGS
@given(kind=st.sampled_from(["width", "nan", "inf", "1d", "3d"]), rows=st.integers(1, 4),
       command=st.sampled_from(["train", "theory"]))
def test_bad_pools_are_refused(kind: str, rows: int, command: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    pool = {"width": np.ones((rows, 2)), "nan": np.full((rows, 3), np.nan),
            "inf": np.full((rows, 3), np.inf), "1d": np.ones(3),
            "3d": np.ones((1, rows, 3))}[kind]
    argv = [command, "--task-pool", "p.npy", "--d", "3", "--n", "5"]
    argv += ["--out", "run", "--steps", "2", "--quiet"] if command == "train" else ["--json"]
    err = assert_refused(argv, capsys, {"p.npy": npy(pool)})
    assert "p.npy" in err


@SETTINGS
@given(tasks=st.integers(-5, 0), command=st.sampled_from(["train", "theory"]))
def test_no_tasks_is_refused(tasks: int, command: str,
                             capsys: pytest.CaptureFixture[str]) -> None:
    argv = [command, "--tasks", str(tasks), "--d", "3", "--n", "5"]
    argv += ["--out", "run", "--quiet"] if command == "train" else []
    assert "tasks" in assert_refused(argv, capsys)


def test_theory_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "p.npy", np.array([[0.5, -1.0, 2.0]]))
    assert main(["theory", "--task-pool", str(tmp_path / "p.npy"), "--d", "3", "--n", "10",
                 "--sigma", "0.5", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["tasks"] == 1 and record["loss_star"] < record["loss_star_nuisance_free"]
    assert np.shape(record["gamma"]) == (3, 3) and len(record["u_x"]) == 3


def test_pretrain_prompts_train(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["train", "--d", "2", "--n", "5", "--sigma", "0.5", "--pretrain-prompts", "64",
                 "--steps", "5", "--batch", "32", "--eval-prompts", "200", "--quiet",
                 "--out", str(out)]) == 0
    result = json.loads((out / "result.json").read_text())
    assert result["sampler"] == "prompts"


@pytest.mark.parametrize("d", [3, 5])
def test_a_pool_whose_optimum_is_over_the_work_bound_is_refused_before_training(
        d: int, capsys: pytest.CaptureFixture[str]) -> None:
    """iclab train ends with the pool optimum's search (about a minute at 4.5e6 work units,
    K = 10^5 took 65 s): --tasks and --task-pool past the bound are refused in one line
    naming the limit and the most tasks, before any file; the most tasks pass the check."""
    from iclab.studies.pool.cost import MAX_POOL_WORK, pool_work
    from iclab.studies.pool.family import with_pool
    from iclab.studies.pool.optimum import DEFAULT_STARTS
    from iclab.tasks.linear_gaussian import LinearGaussian
    most = int(MAX_POOL_WORK // pool_work(1, d, DEFAULT_STARTS))
    assert most == {3: 10044, 5: 4166}[d]   # 4.5e6 / ((d+1)^2 (d+1+24))
    err = assert_refused(["train", "--tasks", str(most + 1), "--d", str(d), "--n", "5",
                          "--steps", "2", "--out", "run", "--quiet"], capsys)
    assert f"tasks {most + 1}" in err and "limit" in err and f"at most {most} tasks" in err
    err = assert_refused(["train", "--task-pool", "p.npy", "--d", str(d), "--n", "5",
                          "--steps", "2", "--out", "run", "--quiet"], capsys,
                         {"p.npy": npy(np.ones((most + 1, d)))})
    assert f"K = {most + 1}" in err and f"at most {most} tasks" in err
    family = with_pool(LinearGaussian(d, 5, 0.5), most, None, seed=0)
    assert family.task_pool.shape == (most, d)
