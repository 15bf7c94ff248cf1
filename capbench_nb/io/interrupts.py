"""SIGINT and SIGTERM as exceptions, critical sections that finish before one is raised, and pause points.

The command line runs every command inside :func:`handling`: SIGINT raises KeyboardInterrupt and
SIGTERM raises :class:`Terminated` (a KeyboardInterrupt too), so both unwind through the same
``finally`` paths, which remove staging folders, stop kernels and end pool workers.  A second
signal while the first unwinds is ignored, so that the clean-up is not cut short.

Publishing a set of outputs runs inside :func:`deferred`: a signal arriving there is held until the
outputs are switched, then raised.  A reader, or the next command, sees the previous outputs or the
complete new ones.

:func:`pause_point` is a test hook: with ``CAPBENCH_PAUSE_AT=NAME=FILE`` in the environment, the
point named NAME creates FILE and waits (at most a minute) for a signal, so that a test can
interrupt a real command at a known moment instead of guessing with a timer.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator

__all__ = ["Terminated", "handling", "deferred", "exit_code", "signalled", "is_program", "hold_early", "raise_held",
           "pause_point",
           "pausing", "PAUSE_ENV"]

#: ``NAME=FILE``: the pause point NAME creates FILE and waits for a signal (tests only).
PAUSE_ENV = "CAPBENCH_PAUSE_AT"
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: Whether a signal arrived (under :func:`handling` or :func:`deferred`): ends pause points, tells worker
#: threads.  A plain flag: a handler must not take a lock the interrupted code may hold.
_received = {"signal": 0}
#: Signals held by :func:`hold_early` before the command line took over.
_early: list[int] = []


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like KeyboardInterrupt (SIGINT) so that the same clean-up runs."""


def exit_code(exc: KeyboardInterrupt) -> int:
    """The shell's convention, 128 + the signal's number: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + (signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)


def signalled() -> int:
    """The number of the first signal that arrived under :func:`handling` or :func:`deferred`,
    0 while none has (a worker thread's cue to stop; the command line's exit code)."""
    return _received["signal"]


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def _installed(handler) -> Iterator[None]:
    """``handler`` for SIGINT and SIGTERM inside the block, the previous handlers back after it."""
    previous = {sig: signal.signal(sig, handler) for sig in _SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def is_program(module_name: str) -> bool:
    """Whether the module ``module_name`` (a ``__name__``) is the ``capbench-nb`` program being run:
    ``python -m`` on it, or the ``capbench-nb`` script that packaging writes."""
    return module_name == "__main__" or os.path.basename(sys.argv[0] if sys.argv else "") == "capbench-nb"


def hold_early() -> None:
    """The program's first act: hold SIGINT and SIGTERM until :func:`handling` starts (the
    toolkit's modules take a few hundred milliseconds to import); :func:`raise_held`, first in
    the block, then raises what came."""
    def hold(signum: int, frame) -> None:
        _received["signal"] = _received["signal"] or signum
        _early.append(signum)

    if _in_main_thread():
        for sig in _SIGNALS:
            signal.signal(sig, hold)


@contextlib.contextmanager
def handling(*, final: bool = False) -> Iterator[None]:
    """Inside the block SIGINT raises KeyboardInterrupt and SIGTERM :class:`Terminated`, once.

    The previous handlers come back at the end; with ``final`` (the block is the whole program), signals are ignored instead:
    the outcome is decided, and a signal while the interpreter shuts down would only turn a
    finished command into a traceback or a kill.  Outside the main thread (where Python cannot
    set handlers) the block runs unchanged.
    """
    if not _in_main_thread():
        yield
        return
    raised = []

    def handler(signum: int, frame) -> None:
        _received["signal"] = _received["signal"] or signum
        if raised:  # already unwinding: let the clean-up finish
            return
        raised.append(signum)
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    _received["signal"] = 0
    try:
        with _installed(handler):
            yield
    finally:
        if final:
            for sig in _SIGNALS:
                signal.signal(sig, signal.SIG_IGN)


def raise_held() -> None:
    """Raise, under :func:`handling`, the signal :func:`hold_early` held, if one came."""
    if _early:
        signal.raise_signal(_early.pop(0))


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A critical section: a SIGINT or SIGTERM arriving inside is held, then delivered when it ends.

    Delivered means re-raised with the handler that was in place before (KeyboardInterrupt,
    :class:`Terminated`, or the default action), right after the block, even when the block
    raised.  Outside the main thread the block runs unchanged.
    """
    if not _in_main_thread():
        yield
        return
    pending: list[int] = []

    def hold(signum: int, frame) -> None:
        _received["signal"] = _received["signal"] or signum
        pending.append(signum)

    try:
        with _installed(hold):
            yield
    finally:
        if pending:
            signal.raise_signal(pending[0])


def pausing(name: str) -> bool:
    """Whether the environment asks the pause point ``name`` to pause (see :func:`pause_point`)."""
    return os.environ.get(PAUSE_ENV, "").partition("=")[0] == name


def pause_point(name: str) -> None:
    """Test hook: under ``CAPBENCH_PAUSE_AT=NAME=FILE``, write this process's id to FILE and wait
    (at most 60 s) until a signal arrives; otherwise nothing."""
    if not pausing(name):
        return
    marker = os.environ[PAUSE_ENV].partition("=")[2]
    with open(marker, "w", encoding="utf-8") as fh:
        fh.write(f"{os.getpid()}\n")
    deadline = time.monotonic() + 60
    while not _received["signal"] and time.monotonic() < deadline:
        time.sleep(0.02)
