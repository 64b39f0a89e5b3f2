"""Sending to chat through Apprise, and the outbox sender thread that does it off the sampling path.

Channels are named Apprise URLs (Slack, Teams, Discord, Mattermost, json://
webhooks, mailto://) or Alertmanager URLs (alertmanager://host:port, sent by
monitor.alerts.alertmanager). The URLs are secrets: only names reach logs,
errors and the database. The sender drains its cluster's outbox oldest first; a
failed send is retried with exponential backoff (1 s doubling to 60 s) forever,
and a later message for the same alert and channel waits for the earlier one, so
a "resolved" never overtakes its "firing".

Every collector on a store runs a sender (shards of one cluster, other clusters),
so a sender claims a row for CLAIM_S before sending it and marks the result under
that claim: each message is sent by one sender. Over a crash between sending and
marking the claim lapses and another sender sends it again: at least once, never
twice otherwise.

Alertmanager forgets an alert that is not posted again before it ends, so the
sender also re-posts, every `resend_s`, each firing alert of its own shard
whose firing message an Alertmanager channel accepted (one POST per channel).
These posts are not outbox rows: one that fails is simply tried again, sooner,
and a post repeated after a restart is the same alert to Alertmanager (it keys
alerts by labels).
"""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
import time
from collections.abc import Callable

from sqlalchemy.engine import Engine

from monitor.alerts import alertmanager
from monitor.alerts.alertmanager import ChannelError, is_alertmanager
from monitor.clock import wall_ms
from monitor.logs import get_logger
from monitor.models import ConfigError
from monitor.shard import UNSHARDED, Shard
from monitor.store.alerts import (
    claim_outbox_row,
    read_alert,
    read_delivered_firing,
    read_outbox,
    write_outbox_result,
)

BACKOFF_FIRST_S, BACKOFF_MAX_S = 1.0, 60.0
RESEND_S = 60.0  # how often firing alerts are posted to Alertmanager again (LAGMON_ALERTMANAGER_RESEND)
CLAIM_S = 60.0  # how long a claimed row is one sender's: far above a send's own timeouts
log = get_logger("alerts")
STOP_CHECK_S = 0.5  # how soon an idle sender sees `stop`: it waits on `wake`, so it looks at `stop` this often

# Apprise logs failures with the target host and path; keep them (and so the secrets) out of our output.
logging.getLogger("apprise").addHandler(logging.NullHandler())
logging.getLogger("apprise").propagate = False


def send_message(url: str, title: str, body: str) -> bool:
    """One message to one channel URL; True when the service accepted it.

    To an Alertmanager that is an info alert named lagmon-test which ends by itself (`alerts test`).
    """
    if is_alertmanager(url):
        try:
            return alertmanager.post_alerts(url, [alertmanager.build_test_alert(title, body, wall_ms())])
        except ChannelError:
            return False
    import apprise

    app = apprise.Apprise()
    if not app.add(url):
        return False
    text = apprise.NotifyFormat.TEXT  # plain text: HTML services get it escaped by Apprise
    return bool(app.notify(title=defuse_markup(title), body=defuse_markup(body), body_format=text))


def defuse_markup(text: str) -> str:
    """Text with names lagmon does not control (a group id is any string), made inert for chat services that
    read Markdown or their own syntax, which Apprise passes plain text to as it is: `@channel`, `<!here>`,
    `<tag>`, `[text](url)` and `![image](url)` show as typed but notify, link and embed nothing. A zero-width
    space after the `@`, `<` or `]` breaks the syntax, not the reading (no backslashes where nothing renders)."""
    return re.sub(r"([@<\]])(?=[\w!#@(/])", "\\1\u200b", text)


def compute_backoff_ms(attempts: int) -> int:
    """Delay before attempt number `attempts` + 1."""
    return int(min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** max(0, attempts - 1)) * 1000)


class OutboxSender:
    """Drains its cluster's outbox in its own thread (`start`); `wake()` after queueing makes it look at once."""

    def __init__(
        self,
        engine: Engine,
        cluster: str,
        channels: dict[str, str],
        *,
        shard: Shard = UNSHARDED,
        send: Callable[[str, str, str], bool] = send_message,
        post: Callable[[str, list[dict]], bool] = alertmanager.post_alerts,
        dashboard_url: str | None = None,
        resend_s: float = RESEND_S,
        now_ms: Callable[[], int] = wall_ms,
        name: str | None = None,
    ):
        self.engine = engine
        self.cluster = cluster
        self.shard = shard  # whose firing alerts it re-posts to Alertmanager
        self.name = name or f"{socket.gethostname()} pid {os.getpid()}"  # its claims' owner, as stored
        self._channels = channels  # name -> URL: never logged
        self.send = send  # Apprise channels: (url, title, body)
        self.post = post  # Alertmanager channels: (url, postable alerts)
        self.dashboard_url = dashboard_url
        self.resend_ms = int(resend_s * 1000)
        self.now_ms = now_ms
        self._alertmanagers = sorted(name for name, url in channels.items() if is_alertmanager(url))
        self._repost_due: dict[str, int] = {}  # Alertmanager channel -> when its firing alerts are posted again
        self._repost_failures: dict[str, int] = {}  # channel -> failed re-posts in a row
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
        for row in read_outbox(self.engine, pending_only=True, cluster=self.cluster):
            if self._stop.is_set():  # the rest stays queued for the next start
                break
            lane = (row.alert_id, row.channel)
            if lane in blocked:
                continue
            held_until = (row.claimed_until or 0) if row.claimed_by != self.name else 0  # by another sender
            due = max(row.next_attempt_at, held_until)
            if due > now or not claim_outbox_row(self.engine, row.id, self.name, now, int(CLAIM_S * 1000)):
                blocked.add(lane)  # not yet, or another sender's: a later message of its lane waits too
                due = max(due, now + int(STOP_CHECK_S * 1000))  # a claim lost just now: look again soon
                next_due = due if next_due is None else min(next_due, due)
                continue
            url = self._channels.get(row.channel)
            ok, error = False, f"channel {row.channel!r} is not configured"
            if url is not None:
                try:
                    ok = self._deliver(url, row)
                    error = None if ok else f"channel {row.channel!r} did not accept the message"
                except ChannelError as e:  # its words are safe to log
                    error = f"channel {row.channel!r}: {e}"
                except Exception as e:  # a broken plugin must not stop the sender
                    error = f"channel {row.channel!r}: {type(e).__name__}"
            now = self.now_ms()
            if ok:
                self._mark(row, now, None, None)
            else:
                retry_at = now + compute_backoff_ms(row.attempts + 1)
                self._mark(row, now, error, retry_at)
                if row.attempts == 0:
                    log.warning("alert message not sent, will retry: %s", error)
                blocked.add(lane)
                next_due = retry_at if next_due is None else min(next_due, retry_at)
        return 30.0 if next_due is None else max(0.05, (next_due - self.now_ms()) / 1000)

    def _mark(self, row, now: int, error: str | None, retry_at: int | None) -> None:
        if not write_outbox_result(self.engine, row.id, self.name, now, error, retry_at):
            log.warning("alert message %d: its claim lapsed while sending; another sender may send it too", row.id)

    def _deliver(self, url: str, row) -> bool:
        if not is_alertmanager(url):
            return self.send(url, row.title, row.body)
        alert = read_alert(self.engine, row.alert_id)
        if alert is None:  # its row was deleted by hand (retention keeps alerts with queued messages): done
            return True
        now = self.now_ms()
        return self.post(url, [alertmanager.build_alert(alert, row.kind, now, self._lifetime_ms, self.dashboard_url)])

    @property
    def _lifetime_ms(self) -> int:
        return alertmanager.LIFETIME_FACTOR * self.resend_ms

    def repost_once(self) -> float:
        """Post the firing alerts of every Alertmanager channel that is due again; seconds until one is due next.

        A channel is due `resend_s` after its last good post (at once after a start); after a
        failed post it is tried again with the outbox's backoff, never later than `resend_s`.
        """
        if not self._alertmanagers:
            return 30.0
        now = self.now_ms()
        due = [c for c in self._alertmanagers if self._repost_due.get(c, 0) <= now]
        if due:
            firing: dict[str, list] = {c: [] for c in due}
            for channel, alert in read_delivered_firing(self.engine, due, self.cluster):
                if self.shard.owns_alert(alert.group_id, alert.topic):
                    firing[channel].append(alert)
            for channel, alerts in firing.items():
                if self._stop.is_set():
                    break
                self._repost(channel, alerts)
        next_due = min(self._repost_due.get(c, 0) for c in self._alertmanagers)
        return max(0.05, (next_due - self.now_ms()) / 1000)

    def _repost(self, channel: str, alerts: list) -> None:
        now = self.now_ms()
        ok, error = True, None
        if alerts:
            posted = [alertmanager.build_alert(a, "firing", now, self._lifetime_ms, self.dashboard_url) for a in alerts]
            try:
                ok = self.post(self._channels[channel], posted)
                error = None if ok else "Alertmanager did not accept them"
            except ChannelError as e:
                ok, error = False, str(e)
            except Exception as e:
                ok, error = False, type(e).__name__
        if ok:
            if self._repost_failures.pop(channel, 0):
                log.info("alertmanager channel %r: firing alerts posted again", channel)
            self._repost_due[channel] = now + self.resend_ms
            return
        failures = self._repost_failures.get(channel, 0) + 1
        self._repost_failures[channel] = failures
        if failures == 1:
            log.warning("alertmanager channel %r: firing alerts not posted again, will retry: %s", channel, error)
        self._repost_due[channel] = now + min(self.resend_ms, compute_backoff_ms(failures))

    def _loop(self) -> None:
        failing = False  # said once when the outbox cannot be read, once when it can again
        while not self._stop.is_set():
            try:
                wait_s = self.drain_once()
                wait_s = min(wait_s, self.repost_once())
                if failing:
                    failing = False
                    log.info("alert sender: the outbox can be read again; sending")
            except Exception as e:  # the database was busy or gone: try again shortly
                if not failing:
                    failing = True
                    log.error("alert sender: %s: %s (retrying every 5s)", type(e).__name__, str(e).splitlines()[0])
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
    """Every channel URL must be an Alertmanager URL or one Apprise understands; the error names the channel,
    never the URL."""
    for name, url in channels.items():
        if is_alertmanager(url):
            try:
                alertmanager.parse_target(url)
            except ConfigError as e:
                raise ConfigError(f"channel {name!r}: {e}") from None
    chat = {name: url for name, url in channels.items() if not is_alertmanager(url)}
    if not chat:
        return  # Apprise is not loaded until there is something to send (its import alone is 5 MB)
    import apprise

    for name, url in chat.items():
        if not apprise.Apprise().add(url):
            raise ConfigError(f"channel {name!r}: Apprise does not understand its URL (check the scheme)")
