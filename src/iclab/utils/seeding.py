"""Seeded random generators derived from (seed, stream, step).

Every random draw in iclab goes through a ``torch.Generator`` made here (or a NumPy generator
seeded by one draw from it, ``numpy_generator``), so a batch is a pure function of the run's
seed, the stream's name and the step: resuming a run at step s draws exactly what an
uninterrupted run drew at step s.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

_RECORDERS: list[set[int]] = []


def derive_seed(seed: int, stream: str, step: int = 0, fixed: bool = False) -> int:
    """A 63-bit seed that depends on (seed, stream, step) and collides with no other triple.

    A hash, not arithmetic, so that (seed=0, step=1) and (seed=1, step=0) are unrelated.
    ``fixed``: ``seed`` is a constant of the code (a probe's draw, a fixed matrix), not a run's
    or a command's seed, so ``recording_seeds`` leaves it out.
    """
    if not fixed:
        for used in _RECORDERS:
            used.add(seed)
    digest = hashlib.blake2b(f"{seed}|{stream}|{step}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)


def make_generator(
    seed: int, stream: str, step: int = 0, device: torch.device | str = "cpu",
    fixed: bool = False,
) -> torch.Generator:
    """A fresh generator on ``device`` seeded from (seed, stream, step); ``fixed``: a seed
    that is a constant of the code (``derive_seed``)."""
    generator = torch.Generator(device=torch.device(device))
    generator.manual_seed(derive_seed(seed, stream, step, fixed))
    return generator


def numpy_generator(generator: torch.Generator) -> np.random.Generator:
    """A NumPy generator (SFC64) seeded by one 63-bit draw from ``generator``, for the few
    draws NumPy makes faster than torch (gamma variates: about 20 ns against 45 ns each on a
    CPU): what it draws stays a pure function of ``generator``'s state."""
    seed = torch.randint(0, 2**63 - 1, (), generator=generator, device=generator.device)
    return np.random.Generator(np.random.SFC64(int(seed)))


@contextmanager
def recording_seeds() -> Iterator[set[int]]:
    """The seeds every generator made inside the block derives from (``derive_seed``): a
    command can tell whether its ``--seed`` was drawn from at all."""
    used: set[int] = set()
    _RECORDERS.append(used)
    try:
        yield used
    finally:
        _RECORDERS.remove(used)
