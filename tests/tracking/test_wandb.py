"""``--track wandb`` without an account: an offline run in RUN/wandb whose record log, read
back with W&B's own protobuf record type, holds the config, every metrics line, the result's
numbers and the verdict. Skipped where wandb is not installed (CI)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from iclab.cli.main import main

FAST = ["--d", "3", "--n", "10", "--sigma", "0.5", "--steps", "60", "--batch", "64",
        "--eval-prompts", "500", "--log-every", "20", "--quiet"]
BLOCK = 32768
"""The record log's block size (W&B writes LevelDB's log format after a 7-byte header)."""
WAIT_SECONDS = 30.0


def _records(path: Path) -> Iterator[Any]:
    """The records of a .wandb file, as wandb's own ``Record`` messages."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    position, pending = 7, b""
    while position + 7 <= len(data):
        left = BLOCK - position % BLOCK
        if left < 7:  # a block's padding
            position += left
            continue
        length, kind = int.from_bytes(data[position + 4:position + 6], "little"), \
            data[position + 6]
        pending += data[position + 7:position + 7 + length]
        position += 7 + length
        if kind in (1, 4):  # a full record, or the last piece of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b""
            yield record


def _items(items: Any) -> dict[str, Any]:
    return {item.key or "/".join(item.nested_key): json.loads(item.value_json)
            for item in items}


def test_an_offline_run_holds_the_config_every_line_and_the_verdict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("wandb")
    pytest.importorskip("wandb.proto.wandb_internal_pb2")
    monkeypatch.setenv("HOME", str(tmp_path))  # no netrc: not logged in
    for name in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_BASE_URL", "WANDB_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    run = tmp_path / "run"
    assert main(["train", *FAST, "--track", "wandb", "--out", str(run)]) == 0
    (log,) = run.glob("wandb/offline-run-*/run-*.wandb")
    # W&B's service writes the log after run.finish() returns: wait for its exit record.
    deadline = time.monotonic() + WAIT_SECONDS
    while not any(r.WhichOneof("record_type") == "exit" for r in _records(log)):
        assert time.monotonic() < deadline, "the W&B log has no exit record"
        time.sleep(0.2)
    history, summary, config = [], {}, {}
    for record in _records(log):
        kind = record.WhichOneof("record_type")
        if kind == "history":
            history.append(_items(record.history.item))
        elif kind == "summary":
            summary.update(_items(record.summary.update))
        elif kind == "run":
            config.update({item.key: item for item in record.run.config.update})
    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [(row["_step"], row["train/loss"], row["train/eta_hat"]) for row in history] == [
        (line["step"], line["loss"], line["eta_hat"]) for line in lines]
    result = json.loads((run / "result.json").read_text())
    assert summary["result/test_loss"] == result["test_loss"]
    assert summary["verdict"] == result["verdict"]
    assert set(json.loads((run / "config.json").read_text())) <= set(config)
