"""``iclab export``: the one-layer lsa as files that need only torch (or numpy), reproducing
iclab's own predictions of the run exactly; other models refused with one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import iclab
from iclab.cli.main import main
from iclab.runs.folder import load_trained_model, read_finished_run

LOADER = """
import importlib.util, sys
import torch
folder, prompts = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("exported", folder + "/model.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
model = module.load()
saved = torch.load(prompts, weights_only=True)
with torch.no_grad():
    yhat = model(saved["X"], saved["y"], saved["x_q"])
assert "iclab" not in sys.modules, "the exported model imported iclab"
assert torch.equal(yhat, saved["yhat"]), (yhat - saved["yhat"]).abs().max()
print("identical", yhat.dtype, yhat.shape[0])
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "run"
    iclab.train(d=4, n=12, sigma=0.3, steps=300, seed=1, attend_query=True, normalise=True,
                out=out)
    return out


def _prompts(run: Path, path: Path) -> dict[str, torch.Tensor]:
    """Fresh seeded prompts and iclab's own float64 predictions on them, saved to ``path``."""
    config, result = read_finished_run(run)
    model = load_trained_model(run, config, result=result)
    generator = torch.Generator().manual_seed(7)
    X = torch.randn(64, 12, 4, generator=generator, dtype=torch.float64)
    y = torch.randn(64, 12, generator=generator, dtype=torch.float64)
    x_q = torch.randn(64, 4, generator=generator, dtype=torch.float64)
    with torch.no_grad():
        saved = {"X": X, "y": y, "x_q": x_q, "yhat": model(X, y, x_q)}
    torch.save(saved, path)
    return saved


def test_torch_export_loads_without_iclab_and_predicts_exactly(run: Path,
                                                               tmp_path: Path) -> None:
    assert main(["export", str(run), "--format", "torch", "--out", str(tmp_path / "t")]) == 0
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == [
        "EXPORTED_BY_ICLAB", "model.pt", "model.py"]
    saved = _prompts(run, tmp_path / "prompts.pt")
    assert saved["yhat"].abs().max() > 0  # a trained model, not zeros
    done = subprocess.run([sys.executable, "-c", LOADER, str(tmp_path / "t"),
                           str(tmp_path / "prompts.pt")], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["identical", "torch.float64", "64"]
    state = torch.load(tmp_path / "t" / "model.pt", weights_only=True)  # plain tensors
    assert set(state["state_dict"]) == {"W_K", "W_Q", "W_V", "h"}


def test_a_perturbed_export_no_longer_matches(run: Path, tmp_path: Path) -> None:
    """The exact comparison can fail: one weight moved by 1e-12 changes the predictions."""
    folder = iclab.export(run, format="torch", out=tmp_path / "t")
    state = torch.load(folder / "model.pt", weights_only=True)
    state["state_dict"]["h"][0] += 1e-12
    torch.save(state, folder / "model.pt")
    _prompts(run, tmp_path / "prompts.pt")
    done = subprocess.run([sys.executable, "-c", LOADER, str(folder),
                           str(tmp_path / "prompts.pt")], capture_output=True, text=True)
    assert done.returncode != 0


def test_npz_export_predicts_with_numpy(run: Path, tmp_path: Path) -> None:
    folder = iclab.export(run, format="npz", out=tmp_path / "n")
    saved = _prompts(run, tmp_path / "prompts.pt")
    sys.path.insert(0, str(folder))
    try:
        import model_numpy  # type: ignore[import-not-found]

        predict = model_numpy.load()
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("model_numpy", None)
    yhat = predict(saved["X"].numpy(), saved["y"].numpy(), saved["x_q"].numpy())
    # numpy's einsum sums in another order than torch's bmm: float64 rounding only
    assert np.allclose(yhat, saved["yhat"].numpy(), rtol=1e-12, atol=0)


def test_other_models_and_formats_are_refused_before_writing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep"
    iclab.train(d=3, n=8, layers=2, steps=20, eval_prompts=2000, out=deep)
    assert main(["export", str(deep), "--format", "torch"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("iclab: error: iclab export supports model lsa with one layer")
    assert len(err.splitlines()) == 1 and not (deep / "export-torch").exists()
    assert main(["export", str(deep), "--format", "onnx"]) == 2
    with pytest.raises(iclab.Error, match=r"^--format must be one of torch, npz"):
        iclab.export(deep, format="onnx")
    with pytest.raises(iclab.Error, match=r"is not a finished iclab run"):
        iclab.export(tmp_path / "nothing", format="torch")
    assert not (tmp_path / "nothing").exists()
