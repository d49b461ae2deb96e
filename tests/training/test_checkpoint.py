from pathlib import Path

import torch

from iclab.models.lsa import LinearSelfAttention, LSAOptions
from iclab.seeding import make_generator
from iclab.training.checkpoint import load_checkpoint, save_checkpoint


def _trained(steps: int) -> tuple[LinearSelfAttention, torch.optim.Adam]:
    model = LinearSelfAttention(LSAOptions(3), make_generator(0, "init"))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for step in range(steps):
        X = torch.randn(16, 4, 3, generator=make_generator(0, "t", step))
        loss = model(X, X.sum(-1), X[:, 0]).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model, optimizer


def test_round_trip_restores_model_and_adam_exactly(tmp_path: Path) -> None:
    model, optimizer = _trained(5)
    path = tmp_path / "checkpoint.safetensors"
    save_checkpoint(path, model, optimizer, step=5, seed=0)
    fresh = LinearSelfAttention(LSAOptions(3), make_generator(9, "init"))
    fresh_opt = torch.optim.Adam(fresh.parameters(), lr=0.5)
    assert load_checkpoint(path, fresh, fresh_opt) == 5
    for name, value in model.state_dict().items():
        assert torch.equal(value, fresh.state_dict()[name])
    saved, loaded = optimizer.state_dict(), fresh_opt.state_dict()
    assert loaded["param_groups"][0]["lr"] == 0.01
    for index, slots in saved["state"].items():
        for slot, value in slots.items():
            restored = loaded["state"][index][slot]
            assert torch.equal(torch.as_tensor(value), torch.as_tensor(restored))


def test_checkpoint_is_not_a_pickle(tmp_path: Path) -> None:
    model, optimizer = _trained(1)
    path = tmp_path / "c.safetensors"
    save_checkpoint(path, model, optimizer, step=1, seed=0)
    header = path.read_bytes()[:16]
    assert not header.startswith(b"\x80")  # pickle protocol marker
    assert b'"format":"iclab-checkpoint-1"' in path.read_bytes()[:4096]
