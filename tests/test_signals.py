"""Ctrl-C held back by ``stop_signals_deferred``: delivered when the block ends, not inside."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from iclab.signals import stop_signals_deferred


@pytest.fixture(autouse=True)
def ctrl_c_raises() -> Iterator[None]:
    """Python's own Ctrl-C handler (a background job starts with Ctrl-C ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_ctrl_c_inside_the_block_arrives_as_it_ends() -> None:
    reached = []
    with pytest.raises(KeyboardInterrupt), stop_signals_deferred():
        os.kill(os.getpid(), signal.SIGINT)
        reached.append("after the signal")           # not interrupted here
    assert reached == ["after the signal"]
    assert not signal.pthread_sigmask(signal.SIG_BLOCK, set())  # the mask is restored


def test_without_the_block_it_interrupts_at_once() -> None:
    reached = []
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):                         # the handler runs within a few bytecodes
            pass
        reached.append("after the signal")
    assert reached == []
