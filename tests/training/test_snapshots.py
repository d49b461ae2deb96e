"""``iclab train --checkpoints K``: the steps kept, the files bound to the run, the
refusals, and ``--weight-decay`` (decoupled: AdamW's kernel for adam, the L2 gradient for
plain SGD)."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from iclab.cli.main import main
from iclab.config.schedule import checkpoint_steps
from iclab.config.train import TrainConfig
from iclab.training.adam import Adam
from iclab.training.sgd import SGD
from iclab.training.snapshots import read_snapshot, snapshot_path, snapshot_steps
from iclab.utils.errors import ConfigError

from ..cli.test_bad_input import FAST, assert_refused


def test_twelve_checkpoints_of_a_thousand_steps_are_log_spaced_plus_the_last() -> None:
    steps = checkpoint_steps(1000, 12)
    assert len(steps) == 13 and steps[0] == 0 and steps[-1] == 1000
    # 1000^(i/12) for i = 1..11 rounds to distinct integers: exactly those
    assert list(steps[1:-1]) == [2, 3, 6, 10, 18, 32, 56, 100, 178, 316, 562]
    ratios = [b / a for a, b in itertools.pairwise(steps[3:])]
    assert all(abs(math.log(r) - math.log(1000) / 12) < 0.1 for r in ratios)


@pytest.mark.parametrize(("total", "kept"), [(5, 5), (20, 12), (7, 1), (1, 1)])
def test_k_distinct_steps_below_the_last(total: int, kept: int) -> None:
    steps = checkpoint_steps(total, kept)
    assert len(set(steps[:-1])) == kept and steps[-1] == total
    assert list(steps) == sorted(steps) and max(steps[:-1]) < total


def test_a_run_keeps_its_checkpoints_bound_to_it(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert main(["train", *FAST, "--steps", "6", "--checkpoints", "6", "--out", str(run)]) == 0
    assert snapshot_steps(run) == [0, 1, 2, 3, 4, 5, 6]
    config = json.loads((run / "config.json").read_text())
    last = read_snapshot(run, 6, config)
    final = load_file(str(run / "model.safetensors"))
    assert all(torch.equal(last[name], final[name]) for name in final)
    first = read_snapshot(run, 0, config)                      # the initial model: trained
    assert any(not torch.equal(first[name], last[name]) for name in last)  # away from
    with pytest.raises(ConfigError, match="another config"):
        read_snapshot(run, 3, {**config, "seed": 1})
    path = snapshot_path(run, 3)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x10                                            # one bit of a weight
    path.write_bytes(bytes(data))
    with pytest.raises(ConfigError, match="does not match its checksum"):
        read_snapshot(run, 3, config)
    assert main(["train", *FAST, "--steps", "6", "--checkpoints", "6", "--out", str(run),
                 "--restart"]) == 0
    assert read_snapshot(run, 3, config)                       # rewritten whole


@pytest.mark.parametrize("argv", [["--checkpoints", "0"], ["--checkpoints", "6"],
                                  ["--weight-decay", "-0.1"]])
def test_refused_with_one_line_and_no_file(argv: list[str],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    err = assert_refused(["train", *FAST, *argv, "--out", "run"], capsys)   # FAST: 5 steps
    assert argv[0].lstrip("-").replace("-", "_") in err, err


def test_as_many_checkpoints_as_steps_is_accepted(tmp_path: Path) -> None:
    assert main(["train", *FAST, "--checkpoints", "5", "--out", str(tmp_path / "r")]) == 0
    assert snapshot_steps(tmp_path / "r") == [0, 1, 2, 3, 4, 5]


def parameters(seed: int) -> list[torch.nn.Parameter]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(*shape, generator=generator))
            for shape in ((4, 5), (3,))]


def gradients(params: list[torch.nn.Parameter], step: int) -> None:
    generator = torch.Generator().manual_seed(100 + step)
    for param in params:
        param.grad = torch.randn(param.shape, generator=generator)


def test_adam_weight_decay_is_torch_adamw() -> None:
    ours, theirs = parameters(0), parameters(0)
    mine, reference = Adam(ours, lr=0.01, weight_decay=0.3), \
        torch.optim.AdamW(theirs, lr=0.01, weight_decay=0.3, fused=True)
    for step in range(20):
        gradients(ours, step)
        gradients(theirs, step)
        mine.step()
        reference.step()
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs, strict=True))
    plain = parameters(0)
    undecayed = Adam(plain, lr=0.01)
    for step in range(20):
        gradients(plain, step)
        undecayed.step()
    assert not torch.equal(plain[0], ours[0])


def test_sgd_weight_decay_is_the_l2_penalty_without_momentum() -> None:
    """theta <- theta (1 - lr lambda) - lr g equals a step on g + lambda theta."""
    ours, penalised = parameters(1), parameters(1)
    sgd = SGD(ours, lr=0.05, weight_decay=0.4)
    for step in range(10):
        gradients(ours, step)
        sgd.step()
        gradients(penalised, step)
        with torch.no_grad():
            for param in penalised:
                assert param.grad is not None
                param.sub_(0.05 * (param.grad + 0.4 * param))
    assert all(torch.allclose(a, b, rtol=0, atol=1e-6) for a, b in
               zip(ours, penalised, strict=True))


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_the_run_hands_its_weight_decay_to_the_optimiser(optimizer: str) -> None:
    from iclab.training.loop import build_model

    config = TrainConfig.flat(d=2, n=5, weight_decay=0.25, optimizer=optimizer)
    _, made = build_model(config, config.make_task(), torch.device("cpu"))
    assert made.param_groups[0]["weight_decay"] == 0.25


def test_weight_decay_does_not_apply_to_exact_training() -> None:
    with pytest.raises(ConfigError, match="weight_decay does not apply to exact"):
        TrainConfig.flat(d=2, n=5, exact=True, weight_decay=0.1).validate()
    TrainConfig.flat(d=2, n=5, exact=True, weight_decay=0.0).validate()
