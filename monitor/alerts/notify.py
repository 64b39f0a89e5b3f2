"""Sending to chat through Apprise, and the outbox sender thread that does it off the sampling path.

Channels are named Apprise URLs (Slack, Teams, Discord, Mattermost, json://
webhooks, mailto://). The URLs are secrets: only names reach logs, errors and
the database. The sender drains the outbox oldest first; a failed send is
retried with exponential backoff (1 s doubling to 60 s) forever, and a later
message for the same alert and channel waits for the earlier one, so a
"resolved" never overtakes its "firing".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sqlalchemy.engine import Engine

from monitor.models import ConfigError
from monitor.store.alerts import read_outbox, write_outbox_result

BACKOFF_FIRST_S, BACKOFF_MAX_S = 1.0, 60.0
STOP_CHECK_S = 0.5  # how soon an idle sender sees `stop`: it waits on `wake`, so it looks at `stop` this often

# Apprise logs failures with the target host and path; keep them (and so the secrets) out of our output.
logging.getLogger("apprise").addHandler(logging.NullHandler())
logging.getLogger("apprise").propagate = False


def send_message(url: str, title: str, body: str) -> bool:
    """One message to one Apprise URL; True when the service accepted it."""
    import apprise

    app = apprise.Apprise()
    if not app.add(url):
        return False
    return bool(app.notify(title=title, body=body))


def compute_backoff_ms(attempts: int) -> int:
    """Delay before attempt number `attempts` + 1."""
    return int(min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** max(0, attempts - 1)) * 1000)


class OutboxSender:
    """Drains the outbox in its own thread (`start`); `wake()` after queueing makes it look at once."""

    def __init__(
        self,
        engine: Engine,
        channels: dict[str, str],
        *,
        send: Callable[[str, str, str], bool] = send_message,
        now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        report: Callable[[str], None] = print,
    ):
        self.engine = engine
        self._channels = channels  # name -> URL: never logged
        self.send = send
        self.now_ms = now_ms
        self.report = report
        self._wake = threading.Event()
        self._stop = threading.Event()  # the one `start` was given; never set for a sender only drained

    def start(self, stop: threading.Event) -> threading.Thread:
        """Send until `stop` is set; then the thread ends after the message in flight (the rest stays queued)."""
        self._stop = stop
        thread = threading.Thread(target=self._loop, name="alert-sender", daemon=True)
        thread.start()
        return thread

    def wake(self) -> None:
        self._wake.set()

    def drain_once(self) -> float:
        """Try every due row once; returns seconds until the next row is due (or a long wait)."""
        now = self.now_ms()
        blocked: set[tuple[int, str]] = set()
        next_due = None
        for row in read_outbox(self.engine, pending_only=True):
            if self._stop.is_set():  # the rest stays queued for the next start
                break
            lane = (row.alert_id, row.channel)
            if lane in blocked:
                continue
            if row.next_attempt_at > now:
                blocked.add(lane)
                next_due = row.next_attempt_at if next_due is None else min(next_due, row.next_attempt_at)
                continue
            url = self._channels.get(row.channel)
            ok, error = False, f"channel {row.channel!r} is not configured"
            if url is not None:
                try:
                    ok = self.send(url, row.title, row.body)
                    error = None if ok else f"channel {row.channel!r} did not accept the message"
                except Exception as e:  # a broken plugin must not stop the sender
                    error = f"channel {row.channel!r}: {type(e).__name__}"
            now = self.now_ms()
            if ok:
                write_outbox_result(self.engine, row.id, now, None, None)
            else:
                retry_at = now + compute_backoff_ms(row.attempts + 1)
                write_outbox_result(self.engine, row.id, now, error, retry_at)
                if row.attempts == 0:
                    self.report(f"alert message not sent, will retry: {error}")
                blocked.add(lane)
                next_due = retry_at if next_due is None else min(next_due, retry_at)
        return 30.0 if next_due is None else max(0.05, (next_due - self.now_ms()) / 1000)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                wait_s = self.drain_once()
            except Exception as e:  # the database was busy or gone: try again shortly
                self.report(f"alert sender: {type(e).__name__}: {e}")
                wait_s = 5.0
            self._wait(wait_s)

    def _wait(self, wait_s: float) -> None:
        """Until woken, `wait_s` has passed or `stop` is set (seen within STOP_CHECK_S)."""
        deadline = time.monotonic() + wait_s
        while not self._stop.is_set() and (left := deadline - time.monotonic()) > 0:
            if self._wake.wait(min(STOP_CHECK_S, left)):
                break
        self._wake.clear()


def check_channels(channels: dict[str, str]) -> None:
    """Every channel URL must be one Apprise understands; the error names the channel, never the URL."""
    if not channels:
        return  # Apprise is not loaded until there is something to send (its import alone is 5 MB)
    import apprise

    for name, url in channels.items():
        if not apprise.Apprise().add(url):
            raise ConfigError(f"channel {name!r}: Apprise does not understand its URL (check the scheme)")
