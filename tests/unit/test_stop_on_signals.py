"""monitor.stopping in this process: a storm of signals while the main thread is busy in Event code.

The deadlock it prevents is a race of a few microseconds (a second signal during the first
handler's `Event.set`); tests/integration/test_stopping.py hunts it in real commands.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

from monitor.stopping import stop_on_signals

STORM = (
    "import os, signal, sys\n"
    "for i in range(int(sys.argv[2])): os.kill(int(sys.argv[1]), (signal.SIGTERM, signal.SIGINT)[i % 2])"
)


def storm(count: int) -> subprocess.Popen:
    """SIGTERM, SIGINT, SIGTERM, ... to this process from another one, as fast as they go."""
    return subprocess.Popen([sys.executable, "-c", STORM, str(os.getpid()), str(count)])


def test_a_storm_of_signals_sets_stop_and_leaves_the_handlers_as_they_were():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    stop = threading.Event()
    restore = stop_on_signals(stop)
    try:
        sender = storm(20_000)
        while sender.poll() is None:  # the main thread in and out of the Event's lock
            stop.wait(0.0001)
            stop.set()
            stop.clear()
        assert sender.returncode == 0
        assert storm(3).wait() == 0
        assert stop.wait(5)
    finally:
        restore()
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_restore_ends_the_watcher_thread():
    restore = stop_on_signals(threading.Event())
    watcher = [t for t in threading.enumerate() if t.name == "stop-on-signal"][-1]
    restore()
    watcher.join(5)
    assert not watcher.is_alive()
