"""Stopping on SIGTERM and SIGINT: no lock in a signal handler, no signal left waiting.

A Python signal handler runs in the main thread between two bytecodes, also
while that thread is inside `Event.wait` or `Event.set` holding the Event's
lock, which is not reentrant. A handler that calls `stop.set()` then waits for
that lock forever: a second SIGTERM landing during the first handler's
`stop.set()` (GNU timeout sends two: to the child, then to its process group)
hung the collector for 20 minutes. SIGINT's KeyboardInterrupt, raised at any
point, is no better. And a Python handler runs only when the main thread next
runs bytecode: a signal landing just before it blocks in `stop.wait(60)` waits
the whole minute.

So the Python handlers do nothing; the signal number reaches a pipe through
`signal.set_wakeup_fd`, which the interpreter's C-level handler writes at once
(one system call, no lock), and a watcher thread blocked on that pipe sets the
Event.

That Event is also how every long-running part stops (monitor.ports.Background):
each was started with it, and its owner sets it and joins them with `join_all`.
"""

from __future__ import annotations

import atexit
import functools
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from monitor.ports import Background

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
T = TypeVar("T")


def stop_on_signals(stop: threading.Event, signals=STOP_SIGNALS) -> Callable[[], None]:
    """Set `stop` when any of `signals` arrives, however many arrive, in any order, at any time.

    Call it from the main thread; a later call (after a library took a signal over) takes the
    signals back. Returns a function that puts the previous handlers back; the commands never
    call it: a signal during their clean-up meets the same harmless handler, and at exit the
    signals are ignored, because Python puts the default handlers back before it tears down its
    modules and a late SIGTERM would end the process by the signal instead of with its exit code.
    """
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    previous = {sig: signal.signal(sig, _through_the_wakeup_fd) for sig in signals}
    threading.Thread(
        target=_set_on_signal, args=(read_fd, stop, frozenset(signals)), name="stop-on-signal", daemon=True
    ).start()
    ignore_at_exit = functools.partial(_ignore, signals)
    atexit.register(ignore_at_exit)

    def restore() -> None:
        atexit.unregister(ignore_at_exit)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        signal.set_wakeup_fd(previous_fd)
        os.close(write_fd)  # the watcher reads the end of the pipe and ends

    return restore


def _through_the_wakeup_fd(signum, frame) -> None:
    """Installed only so that the interpreter catches the signal (and writes its number to the wakeup fd)."""


def _set_on_signal(read_fd: int, stop: threading.Event, signals: frozenset[int]) -> None:
    try:
        while data := os.read(read_fd, 512):
            if signals.intersection(data):  # other signals with a Python handler are written here too
                stop.set()
    finally:
        os.close(read_fd)


def _ignore(signals) -> None:
    for sig in signals:
        signal.signal(sig, signal.SIG_IGN)


def join_all(threads: Iterable[threading.Thread], within_s: float) -> None:
    """Join `threads` within `within_s` in all; one still busy then is a daemon and ends with the process."""
    deadline = time.monotonic() + within_s
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))


def terminate(child: subprocess.Popen, within_s: float) -> int | None:
    """SIGTERM to a child process and its exit code; None when it had not stopped within `within_s` and was
    killed (the caller says so)."""
    child.send_signal(signal.SIGTERM)
    try:
        return child.wait(within_s)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        return None


def run_parts(parts: Sequence[Background], stop: threading.Event, main: Callable[[], T], within_s: float) -> T:
    """Start `parts` in order, run `main` in this thread, then set `stop` and join the parts in reverse.

    Also on the way out of an error, and of a part that failed to start: every part started ends.
    """
    threads: list[threading.Thread] = []
    try:
        for part in parts:
            threads.append(part.start(stop))
        return main()
    finally:
        stop.set()
        join_all(reversed(threads), within_s)
