"""``iclab.cache``: the public entry to the hook points (iclab.models.hooks), on Prompts or
an (X, y, x_q) tuple, one line for anything else; a hook point recorded twice in one forward
is a model's bug, named."""

from __future__ import annotations

import pytest
import torch

import iclab
from iclab.models.lsa.layer import LinearSelfAttention
from iclab.models.lsa.options import LSAOptions
from iclab.tasks.registry import FamilyRegistry
from iclab.utils.seeding import make_generator


def test_cache_reads_prompts_and_tuples_alike() -> None:
    model = LinearSelfAttention.create(3, LSAOptions(), make_generator(0, "m"))
    prompts = FamilyRegistry().make_family("linear-gaussian", 3, 7, 0.5).sample_prompts(
        5, make_generator(1, "p"))
    a = iclab.cache(model, prompts)
    b = iclab.cache(model, (prompts.X, prompts.y, prompts.x_q), names=["attn.1"])
    assert a.shapes == {"resid.0": (5, 8, 4), "attn.1": (5, 1, 4)}
    assert torch.equal(a["attn.1"], b["attn.1"]) and b.names == ("attn.1",)


@pytest.mark.parametrize("prompts", [(1, 2, 3), (torch.zeros(2, 3, 4),),
                                     (torch.zeros(2, 3, 4), torch.zeros(2, 4),
                                      torch.zeros(2, 4))])
def test_bad_prompts_are_one_line(prompts: object) -> None:
    model = LinearSelfAttention.create(4, LSAOptions(), make_generator(0, "m"))
    with pytest.raises(iclab.Error, match=r"^prompts must be iclab Prompts or \(X"):
        iclab.cache(model, prompts)  # type: ignore[arg-type]
    batch = (torch.zeros(1, 2, 4), torch.zeros(1, 2), torch.zeros(1, 4))
    with pytest.raises(iclab.Error, match=r"cache needs an iclab\.models\.Model"):
        iclab.cache(torch.nn.Linear(2, 2), batch)  # type: ignore[arg-type]


def test_a_hook_point_recorded_twice_is_named() -> None:
    class Twice(LinearSelfAttention):
        def forward(self, X: torch.Tensor, y: torch.Tensor, x_q: torch.Tensor) -> torch.Tensor:
            super().forward(X, y, x_q)
            return super().forward(X, y, x_q)

    model = Twice(3, LSAOptions(), make_generator(0, "m"))
    batch = (torch.zeros(2, 4, 3), torch.zeros(2, 4), torch.zeros(2, 3))
    with pytest.raises(RuntimeError, match=r"hook point 'resid.0' recorded shape \(4, 5, 4\) "
                                           r"for 2 prompts"):
        iclab.cache(model, batch)
