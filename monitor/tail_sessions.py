"""The session loop both topic tails run (the offsets-topic tail, the share-state tail).

A session opens a reader and reads until stopped or until it fails; the loop then
closes the reader and opens the next one after a backoff (1 s doubling to 30 s).
A tail must never take the collector down, so every failure ends only the session,
and each distinct one is said once, until the tail is healthy again.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Protocol

from monitor.models import KafkaUnavailable, NotAuthorized

BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 30.0


class Closable(Protocol):
    def close(self) -> None: ...


class FailureLog:
    """Each distinct failure of a tail once, until `healthy` (an unexpected one's traceback at debug level:
    LAGMON_LOG_LEVEL=debug)."""

    def __init__(self, logger: logging.Logger):
        self.logger = logger
        self.last: str | None = None
        self.session_failed = False  # the newest session ended in a failure and none has read since

    def __call__(self, message: str, unexpected: bool = False) -> None:
        if message != self.last:
            self.last = message
            self.logger.warning("%s", message)
            if unexpected:
                self.logger.debug("the tail's traceback", exc_info=True)

    def session(self, message: str, unexpected: bool = False) -> None:
        """A session ended in a failure."""
        self.session_failed = True
        self(message, unexpected)

    def healthy(self) -> None:
        """It read again: report the next failure."""
        self.last = None
        self.session_failed = False


def run_sessions(
    name: str,
    open_reader: Callable[[], Closable],
    session: Callable[[Closable, threading.Event], float | None],
    stop: threading.Event,
    report: FailureLog,
    *,
    refused: Callable[[NotAuthorized], bool],
    ended: Callable[[], None] = lambda: None,
) -> None:
    """Sessions of the tail `name` until `stop`, or until `refused` (told that the topic may not be read)
    says to give up. `session` returns how long to wait before the next one (None: the backoff);
    `ended` runs after each, whatever ended it."""
    backoff = BACKOFF_FIRST_S
    while not stop.is_set():
        reader = open_reader()
        wait = backoff
        try:
            wait = session(reader, stop) or backoff
        except NotAuthorized as e:
            if refused(e):
                return
            report.session(f"{name}: {e} (retrying)")
        except KafkaUnavailable as e:
            report.session(f"{name}: {e} (retrying)")
        except Exception as e:  # a tail must never take the collector down
            report.session(f"{name} failed: {type(e).__name__}: {e} (restarting it)", unexpected=True)
        finally:
            ended()
            with contextlib.suppress(Exception):
                reader.close()
        if stop.wait(wait):
            return
        backoff = min(backoff * 2, BACKOFF_MAX_S)
