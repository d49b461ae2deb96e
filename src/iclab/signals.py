"""Holding Ctrl-C (SIGINT) and SIGTERM back while code that must not be interrupted runs.

Python turns Ctrl-C into a KeyboardInterrupt at whatever line runs at that moment. Inside the
import of a compiled library (torch, numpy, matplotlib) that can abort the interpreter, print an
"Exception ignored" traceback and carry on, or leave the library half imported; in a process
being started it prints a traceback from the child. ``stop_signals_deferred`` blocks both
signals for the duration of a block: one that arrives meanwhile stays pending and is delivered
as the block ends, where the caller handles it like any other interrupt. Child processes started
inside the block inherit the signals blocked (see ``iclab.experiments.executors.local``).

Keep the blocks short and free of user code: a blocked Ctrl-C cannot stop a hang.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


@contextmanager
def stop_signals_deferred() -> Iterator[None]:
    """Block SIGINT and SIGTERM in this thread for the block, then restore the mask (a
    pending signal is delivered then)."""
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not POSIX
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def release_stop_signals() -> None:
    """Unblock SIGINT and SIGTERM (in a child that inherited them blocked)."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
