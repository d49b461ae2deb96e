"""Plain SGD: one step is theta - lr g; with momentum it matches torch.optim.SGD."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

import iclab.training.loop as loop
from iclab.config.train import TrainConfig
from iclab.runs import run_training as train
from iclab.training.sgd import SGD


def _quadratic(params: list[torch.nn.Parameter], target: torch.Tensor) -> torch.Tensor:
    return sum(((p - target) ** 2 * (i + 1)).sum() for i, p in enumerate(params))  # type: ignore[return-value]


def test_a_step_is_theta_minus_lr_g_and_momentum_matches_torch() -> None:
    target = torch.tensor([0.5, -1.0], dtype=torch.float64)
    for momentum in (0.0, 0.9):
        ours = [torch.nn.Parameter(torch.tensor([1.0, 2.0], dtype=torch.float64)),
                torch.nn.Parameter(torch.tensor([-3.0, 0.0], dtype=torch.float64))]
        theirs = [torch.nn.Parameter(p.detach().clone()) for p in ours]
        mine = SGD(ours, lr=0.05, momentum=momentum)
        reference = torch.optim.SGD(theirs, lr=0.05, momentum=momentum)
        for _ in range(5):
            before = [p.detach().clone() for p in ours]
            mine.zero_grad()
            _quadratic(ours, target).backward()  # type: ignore[no-untyped-call]
            grads = [p.grad.clone() for p in ours if p.grad is not None]
            mine.step()
            reference.zero_grad()
            _quadratic(theirs, target).backward()  # type: ignore[no-untyped-call]
            reference.step()
            if momentum == 0.0:
                for p, b, g in zip(ours, before, grads, strict=True):
                    torch.testing.assert_close(p.detach(), b - 0.05 * g, rtol=1e-15, atol=0)
            for p, q in zip(ours, theirs, strict=True):
                torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-15, atol=1e-15)
        state = mine.state_dict()
        again = SGD(ours, lr=0.05, momentum=momentum)
        again.load_state_dict(state)
        assert again.param_groups[0]["momentum"] == momentum


def test_an_interrupted_sgd_run_resumes_bit_identically(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SGD with momentum (its buffers in the checkpoint), the heads model, cosine schedule
    (the time axis summed across the interruption)."""
    config = TrainConfig.flat(d=3, n=6, sigma=0.5, steps=60, batch=128, checkpoint_every=20,
                              log_every=10, eval_prompts=500, optimizer="sgd", momentum=0.9,
                              lr=0.01, kq="separate", heads=2)
    train(config, tmp_path / "clean", progress=False)
    real_save = loop.save_checkpoint
    calls = {"n": 0}

    def save_then_die(*args: object, **kwargs: object) -> None:
        real_save(*args, **kwargs)  # type: ignore[arg-type]
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(loop, "save_checkpoint", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        train(config, tmp_path / "resumed", progress=False)
    monkeypatch.setattr(loop, "save_checkpoint", real_save)
    train(config, tmp_path / "resumed", progress=False)
    for name in ("model.safetensors", "metrics.jsonl"):
        assert (tmp_path / "resumed" / name).read_bytes() == (tmp_path / "clean" / name
                                                              ).read_bytes()
    times = [json.loads(line)["time"] for line in
             (tmp_path / "clean" / "metrics.jsonl").read_text().splitlines()]
    expected = [math.fsum(config.learning_rate(s) for s in range(k)) for k in range(10, 61, 10)]
    assert times == pytest.approx(expected, rel=1e-12)
