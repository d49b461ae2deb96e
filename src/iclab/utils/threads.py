"""How many intra-op threads torch uses for a block of work.

A neutral module: training (``iclab.training.loop``) and the analyses that evaluate many small
batches (``iclab.analysis``) both run with few threads, and neither package imports the other.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def intra_op_threads(count: int) -> Iterator[None]:
    """Run the block with ``count`` intra-op threads, restoring the previous number after."""
    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
