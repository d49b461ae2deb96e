"""Ctrl-C held back by ``stop_signals_deferred``: delivered when the block ends, not inside."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from iclab.utils.signals import stop_signals_deferred


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
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # and the handler


def test_a_ctrl_c_taken_by_another_thread_is_held_back_too() -> None:
    """A thread started before the block does not mask the signal, and the kernel may hand a
    process-directed Ctrl-C to it; Python then raises in the main thread at once unless the
    block holds the handler back as well (without that, this failed in 5 of 6 runs)."""
    done = threading.Event()
    others = [threading.Thread(target=done.wait) for _ in range(4)]
    for thread in others:
        thread.start()
    reached = []
    try:
        with pytest.raises(KeyboardInterrupt), stop_signals_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)                              # time for another thread to take it
            reached.append("after the signal")
    finally:
        done.set()
        for thread in others:
            thread.join()
    assert reached == ["after the signal"]


def test_a_sigterm_in_the_block_reaches_the_callers_handler_once() -> None:
    received: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, _frame: received.append(signum))
    try:
        with stop_signals_deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
            assert received == []
        assert received == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_without_the_block_it_interrupts_at_once() -> None:
    reached = []
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):                         # the handler runs within a few bytecodes
            pass
        reached.append("after the signal")
    assert reached == []
