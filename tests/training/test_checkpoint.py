"""Checkpoints of iclab's own optimiser state: a resumed run continues bit for bit, and every
damaged, foreign or ill-fitting file is refused with one line naming it and ``--restart``."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from iclab.models.lsa.layer import LinearSelfAttention
from iclab.models.lsa.options import LSAOptions
from iclab.training.adam import Adam
from iclab.training.checkpoint import load_checkpoint, save_checkpoint
from iclab.utils.errors import ConfigError
from iclab.utils.seeding import make_generator

HASH = "0123456789abcdef"


def fresh(d: int = 3, seed: int = 0) -> tuple[LinearSelfAttention, Adam]:
    model = LinearSelfAttention(d, LSAOptions(init="random"), make_generator(seed, "init"))
    return model, Adam(model.parameters(), lr=0.01)


def train(model: LinearSelfAttention, optimizer: Adam, steps: range) -> None:
    """Adam steps on a fixed least-squares objective, one seeded batch per step."""
    for step in steps:
        X = torch.randn(16, 4, model.d, generator=make_generator(0, "t", step))
        loss = (model(X, X.sum(-1), X[:, 0]) - X[:, 0].sum(-1)).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def saved(tmp_path: Path, steps: int = 5) -> Path:
    model, optimizer = fresh()
    train(model, optimizer, range(steps))
    path = tmp_path / "checkpoint.safetensors"
    save_checkpoint(path, model, optimizer, step=steps, seed=0, config_hash=HASH)
    return path


def test_resuming_iclab_adam_from_a_checkpoint_is_bit_identical(tmp_path: Path) -> None:
    straight, straight_opt = fresh()
    train(straight, straight_opt, range(12))
    first, first_opt = fresh()
    train(first, first_opt, range(5))
    path = tmp_path / "checkpoint.safetensors"
    save_checkpoint(path, first, first_opt, step=5, seed=0, config_hash=HASH)
    resumed, resumed_opt = fresh(seed=9)          # other weights, empty optimiser state
    assert load_checkpoint(path, resumed, resumed_opt, HASH) == 5
    train(resumed, resumed_opt, range(5, 12))
    for name, value in straight.state_dict().items():
        assert torch.equal(value, resumed.state_dict()[name])
    # the other side: without the optimiser's moments the continuation differs
    cold, cold_opt = fresh()
    cold.load_state_dict(first.state_dict())
    train(cold, cold_opt, range(5, 12))
    assert not torch.equal(cold.W_K, straight.W_K)


def test_the_file_holds_iclab_adam_state_not_a_pickle(tmp_path: Path) -> None:
    path = saved(tmp_path)
    assert not path.read_bytes().startswith(b"\x80")  # pickle protocol marker
    tensors = load_file(str(path))
    model, optimizer = fresh()
    train(model, optimizer, range(5))
    state = optimizer.state_dict()["state"]
    for index, slots in state.items():
        for slot in ("step", "exp_avg", "exp_avg_sq"):
            assert torch.equal(tensors[f"optim.{index}.{slot}"], slots[slot])
    with safe_open(str(path), framework="pt") as handle:
        metadata = handle.metadata()
    assert metadata["format"] == "iclab-checkpoint-1" and metadata["config_hash"] == HASH


def test_another_runs_checkpoint_is_refused(tmp_path: Path) -> None:
    path = saved(tmp_path)
    model, optimizer = fresh()
    with pytest.raises(ConfigError, match=r"belongs to another run .*--restart"):
        load_checkpoint(path, model, optimizer, "fedcba9876543210")
    assert load_checkpoint(path, model, optimizer, HASH) == 5


def _flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-4] ^= 0x01                    # the last float32's lowest mantissa bit: still finite
    path.write_bytes(bytes(data))


def test_damaged_data_is_caught_by_the_checksum(tmp_path: Path) -> None:
    path = saved(tmp_path)
    model, optimizer = fresh()
    assert load_checkpoint(path, model, optimizer, HASH) == 5
    _flip_last_byte(path)
    assert all(torch.isfinite(t).all() for t in load_file(str(path)).values())
    with pytest.raises(ConfigError, match=r"damaged .*checksum.*--restart"):
        load_checkpoint(path, *fresh(), HASH)


@pytest.mark.parametrize("damage", ["empty", "truncated", "random", "directory"])
def test_unreadable_files_are_refused_with_one_line(tmp_path: Path, damage: str) -> None:
    path = saved(tmp_path)
    data = path.read_bytes()
    path.unlink()
    if damage == "directory":
        path.mkdir()
    else:
        path.write_bytes({"empty": b"", "truncated": data[: len(data) // 2],
                          "random": bytes(range(256)) * 8}[damage])
    with pytest.raises(ConfigError) as error:
        load_checkpoint(path, *fresh(), HASH)
    message = str(error.value)
    assert str(path) in message and "--restart" in message and "\n" not in message


def test_a_checkpoint_of_another_shape_is_refused(tmp_path: Path) -> None:
    model, optimizer = fresh(d=4)
    train(model, optimizer, range(2))
    path = tmp_path / "checkpoint.safetensors"
    save_checkpoint(path, model, optimizer, step=2, seed=0, config_hash=HASH)
    with pytest.raises(ConfigError, match=r"does not fit this run's model.*--restart"):
        load_checkpoint(path, *fresh(d=3), HASH)
    assert load_checkpoint(path, *fresh(d=4), HASH) == 2


def test_non_finite_state_is_refused_not_blamed_on_the_learning_rate(tmp_path: Path) -> None:
    model, optimizer = fresh()
    train(model, optimizer, range(3))
    optimizer.state[0]["exp_avg_sq"].fill_(float("nan"))  # saved with a valid checksum
    path = tmp_path / "checkpoint.safetensors"
    save_checkpoint(path, model, optimizer, step=3, seed=0, config_hash=HASH)
    with pytest.raises(ConfigError, match=r"non-finite weights or optimiser state"):
        load_checkpoint(path, *fresh(), HASH)


def test_a_checkpoint_without_a_checksum_still_loads(tmp_path: Path) -> None:
    """Files written before checksums: read, with the other checks."""
    path = saved(tmp_path)
    with safe_open(str(path), framework="pt") as handle:
        metadata = dict(handle.metadata())
    del metadata["checksum"]
    save_file(load_file(str(path)), str(path), metadata=metadata)
    assert load_checkpoint(path, *fresh(), HASH) == 5
