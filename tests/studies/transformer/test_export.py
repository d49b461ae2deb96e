"""``iclab export`` of the transformer: a plain PyTorch module file and a state dict that a
script with only torch loads and that reproduces the run's test predictions, and its test
loss, exactly; a NumPy predictor equal up to float64 rounding; nnsight traces the exported
module's activations."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import iclab
from iclab.analysis.evaluate import ELEMENTS_PER_CHUNK
from iclab.experiments.registries import Registries
from iclab.runs.folder import load_trained_model, read_finished_run
from iclab.utils.seeding import make_generator

EVAL_PROMPTS = 300

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
print(repr(float(((yhat - saved["y_q"]) ** 2).sum()) / yhat.shape[0]))
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "run"
    iclab.train(model="transformer", d=3, n=8, sigma=0.5, layers=2, heads=2, width=16,
                max_examples=16, steps=60, eval_prompts=EVAL_PROMPTS, seed=3, out=out)
    return out


def _eval_prompts(run: Path, path: Path) -> dict[str, torch.Tensor]:
    """The run's own test prompts (drawn as ``iclab.analysis.evaluate.test_loss`` draws them,
    in one chunk) and iclab's float64 predictions on them, saved to ``path``."""
    registries = Registries()
    config, result = read_finished_run(run, registries.models, registries.families)
    task = config.checked_task(registries.families)
    assert EVAL_PROMPTS * (task.n + 1) * (task.d + 1) <= ELEMENTS_PER_CHUNK  # one chunk
    batch = task.sample_prompts(EVAL_PROMPTS, make_generator(config.run.seed, "eval")
                                ).to(torch.float64)
    model = load_trained_model(run, config, registries.models, result)
    with torch.no_grad():
        yhat = model(batch.X, batch.y, batch.x_q)
    saved = {"X": batch.X, "y": batch.y, "x_q": batch.x_q, "y_q": batch.y_q, "yhat": yhat}
    torch.save(saved, path)
    return saved


def _load_module(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _torch_only(folder: Path, prompts: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", LOADER, str(folder), str(prompts)],
                          capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"},
                          cwd=prompts.parent, check=False)


def test_a_torch_only_script_reproduces_the_test_predictions_exactly(run: Path,
                                                                      tmp_path: Path) -> None:
    folder = iclab.export(run, format="torch", out=tmp_path / "t")
    assert sorted(p.name for p in folder.iterdir()) == ["EXPORTED_BY_ICLAB", "model.pt",
                                                       "model.py"]
    saved = _eval_prompts(run, tmp_path / "prompts.pt")
    done = _torch_only(folder, tmp_path / "prompts.pt")
    assert done.returncode == 0, done.stderr
    result = json.loads((run / "result.json").read_text())
    assert float(done.stdout) == result["test_loss"]  # the run's own test loss, exactly
    state = torch.load(folder / "model.pt", weights_only=True)
    iclab_model = load_trained_model(run, read_finished_run(run)[0])
    assert list(state["state_dict"]) == list(iclab_model.state_dict())
    assert saved["yhat"].std() > 0


def test_a_perturbed_export_no_longer_matches(run: Path, tmp_path: Path) -> None:
    """The exact comparison can fail: the read-out's bias moved by 1e-12."""
    folder = iclab.export(run, format="torch", out=tmp_path / "t")
    state = torch.load(folder / "model.pt", weights_only=True)
    state["state_dict"]["read_out.bias"] += 1e-12
    torch.save(state, folder / "model.pt")
    _eval_prompts(run, tmp_path / "prompts.pt")
    assert _torch_only(folder, tmp_path / "prompts.pt").returncode != 0


def test_npz_export_predicts_with_numpy(run: Path, tmp_path: Path) -> None:
    folder = iclab.export(run, format="npz", out=tmp_path / "n")
    saved = _eval_prompts(run, tmp_path / "prompts.pt")
    predict = _load_module(folder / "model_numpy.py", "transformer_numpy").load()
    yhat = predict(saved["X"].numpy(), saved["y"].numpy(), saved["x_q"].numpy())
    # NumPy sums (matmuls, softmax, LayerNorm means) in another order than torch: float64
    # rounding through 2 blocks (measured: at most 4e-16), within 1e-12; GELU's tanh
    # approximation instead of the exact erf form moves predictions by 1e-4 (measured).
    assert np.allclose(yhat, saved["yhat"].numpy(), rtol=0, atol=1e-12)


def test_nnsight_traces_the_exported_transformer(run: Path, tmp_path: Path) -> None:
    nnsight = pytest.importorskip("nnsight")
    folder = iclab.export(run, format="torch", out=tmp_path / "t")
    model = _load_module(folder / "model.py", "transformer_exported").load()
    saved = _eval_prompts(run, tmp_path / "prompts.pt")
    X, y, x_q = saved["X"][:8], saved["y"][:8], saved["x_q"][:8]
    seen: dict[str, torch.Tensor] = {}
    hook = model.blocks[1].register_forward_hook(
        lambda module, inputs, output: seen.setdefault("block", output.detach().clone()))
    with torch.no_grad():
        expected = model(X, y, x_q)
    hook.remove()
    traced = nnsight.NNsight(model)
    with torch.no_grad(), traced.trace(X, y, x_q):  # in execution order, as nnsight asks
        attention = traced.blocks[0].qkv.output.save()
        block = traced.blocks[1].output.save()
        output = traced.output.save()
    attention, block, output = (getattr(v, "value", v) for v in (attention, block, output))
    assert attention.shape == (8, 2 * 9, 3 * 16)  # 9 examples (the query's) as 18 tokens
    assert torch.equal(block, seen["block"])
    assert torch.equal(output, expected)
