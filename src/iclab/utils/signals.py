"""Holding Ctrl-C (SIGINT) and SIGTERM back while code that must not be interrupted runs.

Python turns Ctrl-C into a KeyboardInterrupt at whatever line runs at that moment. Inside the
import of a compiled library (torch, numpy, matplotlib) that can abort the interpreter, print an
"Exception ignored" traceback and carry on, or leave the library half imported; in a process
being started it prints a traceback from the child. ``stop_signals_deferred`` holds both
signals back for the duration of a block: one that arrives meanwhile is delivered as the block
ends, where the caller handles it like any other interrupt. Child processes started inside the
block inherit the signals blocked (see ``iclab.experiments.executors.local``).

Two mechanisms, because a signal sent to the process (Ctrl-C in a terminal, ``kill``) goes to
any thread that does not block it, and the threads a library started before the block (torch's
pool, for one) do not: the block masks both signals in this thread (so this thread's system
calls are not interrupted), and, in the main thread, where Python runs its signal handlers,
replaces their handlers by one that only records the signal. When the block ends, the mask and
the handlers are restored and each recorded signal is raised again, so the caller's handler
runs then.

Keep the blocks short and free of user code: a held-back Ctrl-C cannot stop a hang.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


@contextmanager
def stop_signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back for the block (masked in this thread; recorded, not
    handled, when this is the main thread), then restore both and deliver what arrived."""
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not POSIX
        yield
        return
    arrived: list[int] = []

    def record(signum: int, _frame: FrameType | None) -> None:
        arrived.append(signum)

    handlers = {}
    if threading.current_thread() is threading.main_thread():
        handlers = {signum: signal.signal(signum, record) for signum in sorted(STOP_SIGNALS)}
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)
        # signal.signal runs the handlers of signals already pending (the recorder) first.
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        for arrival in dict.fromkeys(arrived):
            signal.raise_signal(arrival)


def release_stop_signals() -> None:
    """Unblock SIGINT and SIGTERM (in a child that inherited them blocked)."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
