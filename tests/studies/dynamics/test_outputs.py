"""dynamics.json, .csv and .png are written all or none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from iclab.studies.dynamics.outputs import write_dynamics
from iclab.utils.errors import NotFiniteError


def _data(flow_loss: list[float]) -> dict[str, Any]:
    return {"times": [0.1, 0.2], "steps": [1, 2], "flow_loss": flow_loss,
            "sgd_loss": None, "sgd_loss_stderr": None, "flow_grid": [0.1, 0.2],
            "flow_grid_loss": [1.0, 0.9], "rank_k_losses": [1.0, 0.8], "plateaus": [],
            "drop_time_analytic": None}


def test_a_number_that_is_not_finite_writes_no_file(tmp_path: Path) -> None:
    out = tmp_path / "a" / "dyn"
    with pytest.raises(NotFiniteError, match="nothing is written"):
        write_dynamics(out, _data([1.0, float("nan")]))
    assert not (tmp_path / "a").exists()
    write_dynamics(out, _data([1.0, 0.9]))
    assert sorted(p.name for p in out.iterdir()) == ["dynamics.csv", "dynamics.json",
                                                     "dynamics.png"]


def test_a_failed_write_removes_what_it_wrote(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[str] = []

    def failing(path: Path, text: str) -> None:
        if path.name == "dynamics.json":
            raise OSError("disk full")
        path.write_text(text)
        written.append(path.name)

    monkeypatch.setattr("iclab.utils.io.atomic_write_text", failing)
    out = tmp_path / "dyn"
    with pytest.raises(OSError, match="disk full"):
        write_dynamics(out, _data([1.0, 0.9]))
    assert written == ["dynamics.csv"] and not out.exists()
