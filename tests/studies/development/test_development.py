"""``iclab development RUN_DIR``: the final checkpoint's distances from dMMSE and ridge
against those predictors written here from their formulas, the files, and the refusals
(one line, exit 2, nothing written)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from iclab.cli.main import main
from iclab.config.train import TrainConfig
from iclab.training.snapshots import snapshot_path
from iclab.utils.seeding import make_generator

SIGMA = 0.4
TRAIN = ["train", "--model", "transformer", "--layers", "1", "--width", "16", "--heads", "1",
         "--tasks", "3", "--d", "2", "--n", "6", "--sigma", str(SIGMA), "--steps", "30",
         "--batch", "32", "--lr", "0.01", "--warmup", "1", "--checkpoints", "3",
         "--eval-prompts", "200", "--seed", "5", "--quiet"]
PROMPTS = 500


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("development") / "run"
    assert main([*TRAIN, "--out", str(folder)]) == 0
    return folder


def without(option: str) -> list[str]:
    """TRAIN without ``option`` and its value."""
    at = TRAIN.index(option)
    return TRAIN[:at] + TRAIN[at + 2:]


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*")
            if p.is_file()}


def dmmse(pool: np.ndarray, X: np.ndarray, y: np.ndarray, x_q: np.ndarray) -> np.ndarray:
    """sum_k softmax_k(-|y - X w_k|^2 / (2 sigma^2)) w_k . x_q, prompt by prompt."""
    out = np.empty(len(X))
    for b in range(len(X)):
        log_weights = np.array([-np.sum((y[b] - X[b] @ w) ** 2) / (2 * SIGMA**2)
                                for w in pool])
        weights = np.exp(log_weights - log_weights.max())
        out[b] = (weights / weights.sum()) @ pool @ x_q[b]
    return out


def ridge(X: np.ndarray, y: np.ndarray, x_q: np.ndarray) -> np.ndarray:
    """(X^T X + sigma^2 I)^-1 X^T y . x_q: the posterior mean under w ~ N(0, I)."""
    d = X.shape[2]
    return np.array([np.linalg.solve(X[b].T @ X[b] + SIGMA**2 * np.eye(d), X[b].T @ y[b])
                     @ x_q[b] for b in range(len(X))])


def test_final_distances_agree_with_the_formulas(run: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["development", str(run), "--prompts", str(PROMPTS), "--json", "--quiet"]) == 0
    printed = json.loads(capsys.readouterr().out)
    data = json.loads((run / "development.json").read_text())
    assert printed == data
    assert [row["step"] for row in data["checkpoints"]] == [0, 3, 10, 30]
    assert (run / "development.csv").read_text().splitlines()[0].startswith("step,")
    assert (run / "development.png").read_bytes()[:4] == b"\x89PNG"
    config = TrainConfig.from_json(json.loads((run / "config.json").read_text()))
    task = config.make_task()
    pool = np.load(run / "pool.npy")
    prompts = task.sample_prompts(PROMPTS, make_generator(5, "development-pool"),
                                  torch.float64)
    X, y, x_q = (t.numpy() for t in (prompts.X, prompts.y, prompts.x_q))
    model = config.model_class().create(2, config.model, make_generator(0, "t", fixed=True),
                                        torch.float64)
    model.load_state_dict({k: v.double() for k, v in
                           load_file(str(run / "model.safetensors")).items()})
    with torch.no_grad():
        f = model(prompts.X, prompts.y, prompts.x_q).numpy()
    final = data["checkpoints"][-1]
    for key, exact in (("dmmse", dmmse(pool, X, y, x_q)), ("ridge", ridge(X, y, x_q))):
        squared = (f - exact) ** 2
        assert final[f"dist_{key}"] == pytest.approx(squared.mean(), rel=1e-9)
        assert final[f"dist_{key}_stderr"] == pytest.approx(
            squared.std(ddof=1) / np.sqrt(PROMPTS), rel=1e-6)
    loss = ((f - prompts.y_q.numpy()) ** 2).mean()
    assert final["test_loss_pool"] == pytest.approx(loss, rel=1e-9)
    assert 0 <= final["mix_dmmse"] <= 1


def refused(argv: list[str], folder: Path, capsys: pytest.CaptureFixture[str]) -> str:
    before = files(folder)
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert files(folder) == before
    return err


def test_a_run_without_checkpoints_is_refused(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*without("--checkpoints"), "--out", str(tmp_path / "plain")]) == 0
    capsys.readouterr()
    err = refused(["development", str(tmp_path / "plain")], tmp_path, capsys)
    assert "holds no checkpoints" in err


def test_an_edited_checkpoint_is_refused(run: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    for name in ("development.json", "development.csv", "development.png"):
        (copy / name).unlink(missing_ok=True)
    path = snapshot_path(copy, 10)
    data = bytearray(path.read_bytes())
    data[-2] ^= 0x01
    path.write_bytes(bytes(data))
    err = refused(["development", str(copy), "--prompts", "50"], tmp_path, capsys)
    assert "does not match its checksum" in err and "step-000000010" in err


@pytest.mark.parametrize(("argv", "word"), [(["--prompts", "1"], "--prompts"),
                                            (["--llc", "--llc-chains", "1"], "chains")])
def test_bad_settings_are_refused(run: Path, tmp_path: Path, argv: list[str], word: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    err = refused(["development", str(copy), *argv], tmp_path, capsys)
    assert word in err
    assert main(["development", str(copy), "--prompts", "2", "--quiet"]) == 0  # the edge


def test_a_run_without_a_pool_is_refused(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*without("--tasks"), "--out", str(tmp_path / "free")]) == 0
    capsys.readouterr()
    err = refused(["development", str(tmp_path / "free")], tmp_path, capsys)
    assert "task pool" in err


def test_llc_per_checkpoint_with_its_chain_settings_recorded(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    assert main(["development", str(copy), "--prompts", "50", "--llc", "--llc-samples", "64",
                 "--llc-chains", "2", "--llc-draws", "20", "--llc-burn-in", "5",
                 "--llc-step", "1e-5", "--quiet"]) == 0
    data = json.loads((copy / "development.json").read_text())
    settings = data["llc_settings"]
    assert (settings["samples"], settings["chains"], settings["draws"], settings["burn_in"],
            settings["step"], settings["localisation"]) == (64, 2, 20, 5, 1e-5, 1.0)
    assert settings["beta"] == pytest.approx(1 / np.log(64))
    assert all(np.isfinite(row["llc"]) and row["llc_stderr"] >= 0
               for row in data["checkpoints"])
    assert "llc" in (copy / "development.csv").read_text().splitlines()[0]


def test_an_llc_setting_without_llc_is_refused(run: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    err = refused(["development", str(copy), "--llc-chains", "4"], tmp_path, capsys)
    assert "--llc-chains applies with --llc only" in err


def test_the_devinterp_estimator_without_the_extra_is_refused_before_work(
        run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    monkeypatch.setattr("iclab.studies.development.llc_devinterp.importlib.util.find_spec",
                        lambda name: None)
    err = refused(["development", str(copy), "--llc", "--llc-estimator", "devinterp"],
                  tmp_path, capsys)
    assert "pip install 'iclab[devinterp]'" in err
