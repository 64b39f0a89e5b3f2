"""`collect` runs the collector in a worker process and starts it again when it dies.

The worker holds the Kafka clients, and so librdkafka's native code: a crash there
(a segfault when a broker stops cleanly, docs/production.md "When things break")
ends the worker, not lagmon. What a worker needs to go on is in the store (the
tail's read positions, the health engine's state saved every minute, open alerts
and rebalances), so the next one continues the same history; it is told how many
workers died before it and why, and shows that on /metrics, in the store's samples
and in the collector-unhealthy alert. The supervisor holds nothing else: it
passes stop signals on and waits. A worker that stops on a bad setting or a store
that refuses it (exit 2) is not started again: that needs a person.

`collect` checks its options with the whole command line, then becomes the supervisor
by exec (`python -m monitor.supervisor`): the same process, holding only this module's
few imports, 13 MB resident instead of 23 for as long as the collector runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import NoReturn

from monitor.logs import configure_logging, get_logger
from monitor.stopping import stop_on_signals, terminate

EXIT_REFUSED = 2  # a bad setting or a store that refuses: said by the worker, not retried
FIRST_DELAY_S = 1.0
MAX_DELAY_S = 60.0
HEALTHY_RUN_S = 600.0  # a worker that ran this long starts the backoff again from FIRST_DELAY_S
STOP_GRACE_S = 30.0  # after a stop signal, a worker still running then is killed
# glibc's malloc for the supervisor and its worker (set unless the environment sets them): two arenas for all
# threads (librdkafka's included), and blocks from 64 KiB mapped apart and given back when freed, where
# glibc would otherwise raise that bound as big blocks are freed and keep them in its heap. A busy
# worker's freed memory stayed resident: bench_collector (b) 134-136 MB peak against 139-142 (docs/benchmarks.md)
MALLOC_SETTINGS = {"MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "131072"}
_CRASH_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE})

log = get_logger("collector")


def describe_exit(returncode: int) -> str:
    """How a worker ended, for people: 'died of SIGSEGV (a crash in native code)', 'exited with code 1'."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    try:
        sig = signal.Signals(-returncode)
    except ValueError:
        return f"died of signal {-returncode}"
    return f"died of {sig.name}" + (" (a crash in native code)" if sig in _CRASH_SIGNALS else "")


def compute_restart_delay(returncode: int, ran_s: float, previous_delay_s: float | None) -> float | None:
    """Seconds to wait before starting a worker that ended unasked; None: do not start it again."""
    if returncode in (0, EXIT_REFUSED):
        return None
    if previous_delay_s is None or ran_s >= HEALTHY_RUN_S:
        return FIRST_DELAY_S
    return min(previous_delay_s * 2, MAX_DELAY_S)


def worker_command(collect_args: Sequence[str], restarts: int, last_exit: str | None) -> list[str]:
    """The worker's command line: this interpreter, `collect` with the same options, and its history."""
    command = [sys.executable, "-m", "monitor", "collect", *collect_args, "--worker", str(os.getpid())]
    if restarts:
        command += ["--worker-restarts", str(restarts), "--worker-last-exit", last_exit or "unknown"]
    return command


def become_supervisor(collect_args: Sequence[str], log_format: str, log_level: str) -> NoReturn:
    """Replace this process (same pid, so signals and process managers find it) by the lean supervisor."""
    sys.stdout.flush()
    sys.stderr.flush()
    argv = [sys.executable, "-m", "monitor.supervisor", log_format, log_level, *collect_args]
    os.execve(sys.executable, argv, {**MALLOC_SETTINGS, **os.environ})  # glibc reads them as the process starts


def main(argv: Sequence[str]) -> int:
    """The lean supervisor: `python -m monitor.supervisor LOG_FORMAT LOG_LEVEL [collect options]`."""
    log_format, log_level, *collect_args = argv
    configure_logging(log_format, log_level)
    stop = threading.Event()
    stop_on_signals(stop)
    return supervise(collect_args, stop)


def supervise(
    collect_args: Sequence[str],
    stop: threading.Event,
    start: Callable[[list[str]], subprocess.Popen] = subprocess.Popen,
) -> int:
    """Run workers until `stop` is set or one ends for good; returns the exit code for `collect`."""
    restarts, delay, last_exit = 0, None, None
    while True:
        started = time.monotonic()
        worker = start(worker_command(collect_args, restarts, last_exit))
        while worker.poll() is None:
            if stop.wait(0.2):
                return _stop(worker)
        returncode = worker.returncode
        if stop.is_set():  # the signal reached the worker too (a terminal's Ctrl-C) and it stopped
            return 0 if returncode in (0, -signal.SIGTERM, -signal.SIGINT, 130) else returncode
        ran_s = time.monotonic() - started
        delay = compute_restart_delay(returncode, ran_s, delay)
        if delay is None:
            return returncode
        restarts += 1
        last_exit = describe_exit(returncode)
        log.error(
            "the collector's worker %s after %.0fs; starting it again in %gs (restart %d)",
            last_exit,
            ran_s,
            delay,
            restarts,
            extra={"restarts": restarts, "exit": returncode},
        )
        if stop.wait(delay):
            return 0


def _stop(worker: subprocess.Popen) -> int:
    """Pass the stop on and wait for the worker's clean stop (killed after STOP_GRACE_S)."""
    returncode = terminate(worker, STOP_GRACE_S)
    if returncode is None:
        log.error("the collector's worker did not stop within %gs of SIGTERM: killed", STOP_GRACE_S)
        return 1
    return 0 if returncode in (0, -signal.SIGTERM, 130) else returncode


def watch_supervisor(supervisor: int, stop: threading.Event, every_s: float = 1.0) -> threading.Thread:
    """In a worker: set `stop` once its supervisor (by pid) is no longer its parent, so no worker outlives
    it; checked at once too, for a supervisor killed while the worker was starting."""

    def watch() -> None:
        while True:
            if os.getppid() != supervisor:
                log.error("the collector's supervisor is gone: stopping")
                stop.set()
                return
            if stop.wait(every_s):
                return

    thread = threading.Thread(target=watch, name="watch-supervisor", daemon=True)
    thread.start()
    return thread


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
