"""iclab's Adam against torch.optim.Adam(fused=True): the same bits, the same state layout."""

from __future__ import annotations

import pytest
import torch

from iclab.training.adam import Adam


def parameters(seed: int, dtype: torch.dtype = torch.float32) -> list[torch.nn.Parameter]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(*shape, generator=generator, dtype=dtype))
            for shape in ((4, 5), (5,), (3, 4))]


def run(optimizer: Adam | torch.optim.Adam, params: list[torch.nn.Parameter],
        steps: range) -> None:
    """Steps with pseudo-gradients drawn from (step) and a changing learning rate."""
    for step in steps:
        generator = torch.Generator().manual_seed(1000 + step)
        optimizer.param_groups[0]["lr"] = 0.01 / (1 + step)
        optimizer.zero_grad(set_to_none=True)
        for index, param in enumerate(params):
            if index == 2 and step % 3 == 0:
                continue                                       # sometimes no gradient
            param.grad = torch.randn(param.shape, generator=generator, dtype=param.dtype)
        optimizer.step()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_updates_are_bit_identical_to_torch_fused_adam(dtype: torch.dtype) -> None:
    ours, theirs = parameters(0, dtype), parameters(0, dtype)
    run(Adam(ours, lr=0.01), ours, range(40))
    run(torch.optim.Adam(theirs, lr=0.01, fused=True), theirs, range(40))
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs, strict=True))
    # and it is Adam: different from plain SGD on the same gradients
    assert not torch.equal(ours[0], parameters(0, dtype)[0])


def test_state_dict_round_trip_resumes_bit_identically() -> None:
    straight, resumed = parameters(1), parameters(1)
    optimizer = Adam(straight, lr=0.01)
    run(optimizer, straight, range(30))
    first = Adam(resumed, lr=0.01)
    run(first, resumed, range(12))
    second = Adam(resumed, lr=0.5)
    second.load_state_dict(first.state_dict())
    run(second, resumed, range(12, 30))
    assert all(torch.equal(a, b) for a, b in zip(straight, resumed, strict=True))


def test_state_dict_is_interchangeable_with_torch() -> None:
    ours, theirs = parameters(2), parameters(2)
    mine = Adam(ours, lr=0.01)
    torchs = torch.optim.Adam(theirs, lr=0.01, fused=True)
    run(mine, ours, range(5))
    run(torchs, theirs, range(5))
    state, reference = mine.state_dict(), torchs.state_dict()
    assert state["param_groups"] == reference["param_groups"]
    assert state["state"].keys() == reference["state"].keys()
    for index, slots in reference["state"].items():
        assert slots.keys() == state["state"][index].keys()
        assert all(torch.equal(slots[name], state["state"][index][name]) for name in slots)
    # torch's state loads into ours and continues identically
    again = parameters(2)
    run(torch.optim.Adam(again, lr=0.01, fused=True), again, range(5))
    loaded = Adam(again, lr=0.01)
    loaded.load_state_dict(torchs.state_dict())
    run(loaded, again, range(5, 15))
    run(torchs, theirs, range(5, 15))
    assert all(torch.equal(a, b) for a, b in zip(again, theirs, strict=True))


def test_rejects_mismatched_state_and_empty_parameters() -> None:
    with pytest.raises(ValueError, match="empty"):
        Adam([], lr=0.1)
    optimizer = Adam(parameters(3), lr=0.1)
    with pytest.raises(ValueError, match="3 parameters, expected 2"):
        Adam(parameters(3)[:2], lr=0.1).load_state_dict(optimizer.state_dict())
