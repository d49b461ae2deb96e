"""examples/python_api.py (a jupytext percent notebook) runs top to bottom in a Jupyter
kernel: converted by jupytext, executed by nbclient (the dev extras pin both and
ipykernel; the test is skipped only where they are not installed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "python_api.py"


def test_the_example_notebook_runs_end_to_end(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ICLAB_EXAMPLE_OUT", str(tmp_path))
    source = Path(__file__).resolve().parents[2] / "src"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(source), *filter(None, [os.environ.get("PYTHONPATH")])]))
    notebook = jupytext.read(NOTEBOOK)
    assert sum(cell.cell_type == "code" for cell in notebook.cells) >= 4
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = "".join(output.get("text", "") for cell in notebook.cells
                      if cell.cell_type == "code" for output in cell.get("outputs", []))
    assert "refused: d must be an integer >= 1" in outputs
    assert "eta* = 1/(n+d+1+sigma^2) = 0.038095" in outputs
    assert (tmp_path / "run" / "result.json").is_file()
    assert (tmp_path / "theory_beside_run.png").stat().st_size > 1000
