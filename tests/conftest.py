"""Shared test settings: deterministic CPU torch, a small hypothesis budget."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from hypothesis import settings

from iclab.utils.threads import intra_op_threads

settings.register_profile("iclab", max_examples=40, deadline=None)
settings.load_profile("iclab")
torch.set_num_threads(2)


@pytest.fixture
def one_thread() -> Iterator[None]:
    """One intra-op thread for the test: small tensors are faster so, and robust on a busy
    2-core machine (modules that want it say ``pytest.mark.usefixtures("one_thread")``)."""
    with intra_op_threads(1):
        yield
