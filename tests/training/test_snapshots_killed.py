"""SIGKILL in the middle of ``iclab train --checkpoints K`` and the same command again: the
kept checkpoints, the model, the metrics and the result are the bytes of an uninterrupted run
(the numbers of result.json; its timings differ by nature), and the resume state holds the
same tensors."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from safetensors.torch import load_file

from ..cli.test_interrupts import finish, start, wait_for

TRAIN = ["train", "--model", "transformer", "--layers", "2", "--width", "32", "--heads", "2",
         "--tasks", "4", "--d", "2", "--n", "8", "--sigma", "0.25", "--steps", "400",
         "--batch", "32", "--checkpoint-every", "50", "--checkpoints", "8", "--log-every",
         "10", "--eval-prompts", "1000", "--seed", "3", "--quiet"]
TIMINGS = ("wall_seconds", "cpu_seconds", "threads", "binding")


def files(run: Path) -> dict[str, bytes]:
    out = {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*"))
           if p.is_file() and p.name not in ("result.json", "checkpoint.safetensors")}
    # the resume state's metadata has several keys, which safetensors orders at random:
    # its tensors are compared
    state = load_file(str(run / "checkpoint.safetensors"))
    out["resume state"] = b"".join(name.encode() + state[name].numpy().tobytes()
                                   for name in sorted(state))
    result = json.loads((run / "result.json").read_text())
    out["result numbers"] = json.dumps({k: v for k, v in result.items() if k not in TIMINGS},
                                       sort_keys=True).encode()
    out["binding"] = json.dumps(result["binding"]["model_checksum"]).encode()
    return out


def test_killed_and_rerun_is_bit_identical_to_uninterrupted(tmp_path: Path) -> None:
    straight = start([*TRAIN, "--out", "straight"], tmp_path)
    assert finish(straight)[0] == 0
    killed = start([*TRAIN, "--out", "killed"], tmp_path)
    wait_for(tmp_path / "killed" / "checkpoint.safetensors", killed)   # step 50 or later
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=60)
    assert killed.returncode == -signal.SIGKILL
    assert not (tmp_path / "killed" / "result.json").exists()          # killed mid-run
    rerun = start([*TRAIN, "--out", "killed"], tmp_path)
    assert finish(rerun)[0] == 0
    expected, got = files(tmp_path / "straight"), files(tmp_path / "killed")
    kept = sorted(name for name in expected if name.startswith("checkpoints/"))
    assert len(kept) == 9                                               # 8 + the last
    assert sorted(got) == sorted(expected)
    assert [name for name in expected if got[name] != expected[name]] == []
