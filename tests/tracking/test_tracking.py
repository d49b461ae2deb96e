"""Experiment tracking (``--track``, ``iclab.tracking``): what a run logs is read back with
each library's own reader (TensorBoard's EventAccumulator, MlflowClient) and compared with the
run's own files; a missing library is refused in one line before anything is written."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import iclab
from iclab.cli.main import main
from iclab.tracking import Tracking, make_tracking
from iclab.tracking.mlflow_backend import EXPERIMENT, default_uri

FAST = ["--d", "3", "--n", "10", "--sigma", "0.5", "--steps", "60", "--batch", "64",
        "--eval-prompts", "500", "--log-every", "20", "--quiet"]


def _lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def _mlflow_run(uri: str) -> Any:
    mlflow_tracking = pytest.importorskip("mlflow.tracking")
    client = mlflow_tracking.MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1
    return client, runs[0]


@pytest.fixture(scope="module")
def tracked_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("tensorboard")
    pytest.importorskip("mlflow")
    run = tmp_path_factory.mktemp("tracked") / "run"
    assert main(["train", *FAST, "--track", "tensorboard", "--track", "mlflow",
                 "--out", str(run)]) == 0
    return run


def test_tensorboard_holds_every_metrics_line_and_the_result(tracked_run: Path) -> None:
    accumulator_module = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator")
    events = accumulator_module.EventAccumulator(str(tracked_run / "tensorboard"))
    events.Reload()
    lines = _lines(tracked_run)
    assert [line["step"] for line in lines] == [20, 40, 60]
    for key in ("loss", "lr", "eta_hat", "isotropy_err"):
        logged = [(event.step, event.value) for event in events.Scalars(f"train/{key}")]
        # TensorBoard stores scalars as float32: each value is the line's, rounded so.
        assert logged == [(line["step"], float(np.float32(line[key]))) for line in lines]
    result = json.loads((tracked_run / "result.json").read_text())
    (test_loss,) = events.Scalars("result/test_loss")
    assert test_loss.value == float(np.float32(result["test_loss"]))
    texts = events.Tags()["tensors"]
    assert "config/text_summary" in texts and "verdict/text_summary" in texts
    (verdict,) = events.Tensors("verdict/text_summary")
    assert verdict.tensor_proto.string_val == [result["verdict"].encode()]


def test_mlflow_holds_the_config_every_metrics_line_and_the_verdict(tracked_run: Path) -> None:
    client, run = _mlflow_run(default_uri(tracked_run))
    assert run.info.status == "FINISHED"
    config = json.loads((tracked_run / "config.json").read_text())
    assert run.data.params == {key: str(value) for key, value in config.items()}
    lines = _lines(tracked_run)
    for key in ("loss", "lr", "eta_hat"):
        history = client.get_metric_history(run.info.run_id, f"train/{key}")
        assert sorted((m.step, m.value) for m in history) == [
            (line["step"], line[key]) for line in lines]
    result = json.loads((tracked_run / "result.json").read_text())
    assert run.data.metrics["result/test_loss"] == result["test_loss"]
    assert run.data.metrics["result/eta_hat"] == result["eta_hat"]
    assert run.data.tags["verdict"] == result["verdict"]
    assert [a.path for a in client.list_artifacts(run.info.run_id)] == ["config.json"]


def test_figures_and_a_failure_are_logged(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    pytest.importorskip("mlflow")
    accumulator_module = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(2, 1.5))
    axes.plot([0, 1], [1, 0])
    figure.savefig(tmp_path / "curve.png", dpi=50)
    plt.close(figure)
    tracking = make_tracking(["tensorboard", "mlflow"])
    with tracking.session(tmp_path, {"d": 3}) as session:
        session.log_metrics({"step": 5, "loss": 0.5, "note": "text", "stderr": None})
        session.finish({"test_loss": 0.25, "verdict": "optimal"}, tmp_path)
    client, run = _mlflow_run(default_uri(tmp_path))
    assert [a.path for a in client.list_artifacts(run.info.run_id, "figures")] == [
        "figures/curve.png"]
    assert set(run.data.metrics) == {"train/loss", "result/test_loss"}
    events = accumulator_module.EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    (image,) = events.Images("figures/curve")
    assert (image.width, image.height) == (100, 75)

    failed = tmp_path / "failed"
    failed.mkdir()
    with pytest.raises(RuntimeError), Tracking(("mlflow",)).session(failed, {}) as session:
        raise RuntimeError("training failed")
    assert _mlflow_run(default_uri(failed))[1].info.status == "FAILED"


def test_a_missing_library_is_one_line_exit_2_and_nothing_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)  # as if wandb were not installed
    out = tmp_path / "run"
    assert main(["train", *FAST, "--track", "wandb", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == ("iclab: error: --track wandb needs wandb, which is not installed: "
                   "pip install 'iclab[wandb]'\n")
    assert not out.exists()
    with pytest.raises(iclab.Error, match=r"pip install 'iclab\[wandb\]'"):
        iclab.train(d=3, n=10, sigma=0.5, out=str(out), track=["wandb"])
    assert not out.exists()


def test_track_uri_only_with_mlflow_and_it_is_used(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["train", *FAST, "--track-uri", "file:///x", "--out", str(out)]) == 2
    assert "--track-uri applies only with --track mlflow" in capsys.readouterr().err
    assert not out.exists()
    with pytest.raises(iclab.Error, match="--track must be one of tensorboard, mlflow, wandb"):
        iclab.train(d=3, n=10, sigma=0.5, out=str(out), track="comet")
    assert not out.exists()
    pytest.importorskip("mlflow")
    store = (tmp_path / "store").as_uri()
    result = iclab.train(d=3, n=10, sigma=0.5, steps=40, batch=64, eval_prompts=500,
                         log_every=20, out=str(out), track="mlflow", track_uri=store)
    assert not (out / "mlruns").exists()
    client, run = _mlflow_run(store)
    history = client.get_metric_history(run.info.run_id, "train/loss")
    assert [(m.step, m.value) for m in sorted(history, key=lambda m: m.step)] == [
        (line["step"], line["loss"]) for line in _lines(out)]
    assert run.data.tags["verdict"] == result.verdict


def test_wandb_runs_offline_without_credentials(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from iclab.tracking import wandb_backend

    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_BASE_URL", "NETRC"):
        monkeypatch.delenv(name, raising=False)
    assert wandb_backend.mode() == "offline"
    (tmp_path / ".netrc").write_text("machine api.wandb.ai login user password secret\n")
    (tmp_path / ".netrc").chmod(0o600)
    assert wandb_backend.mode() == "online"
    (tmp_path / ".netrc").unlink()
    monkeypatch.setenv("WANDB_API_KEY", "x")
    assert wandb_backend.mode() == "online"
    monkeypatch.setenv("WANDB_MODE", "disabled")
    assert wandb_backend.mode() == "disabled"
    monkeypatch.setenv("WANDB_MODE", "dry")
    with pytest.raises(iclab.Error, match="WANDB_MODE must be one of online, offline"):
        wandb_backend.mode()


def test_a_tracker_that_cannot_start_is_one_line(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("mlflow")
    out = tmp_path / "run"
    assert main(["train", *FAST, "--track", "mlflow", "--track-uri", "nosuchscheme://x",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("iclab: error: --track mlflow: cannot start logging (")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (out / "metrics.jsonl").exists()
