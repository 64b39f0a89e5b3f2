"""Alertmanager channels on the outbox: the real alert engine and sender on a real store, a recording `post`.

What Alertmanager itself makes of the posts is tests/integration/test_alertmanager.py; here the
clock is the test's, so when each alert is posted, and what it says, is exact.
"""

from __future__ import annotations

import sqlalchemy as sa
from factories import T0, LagSwitch
from harness import log_records

from monitor.alerts.alertmanager import ChannelError
from monitor.alerts.engine import AlertEngine
from monitor.alerts.notify import OutboxSender
from monitor.alerts.rules import parse_rules
from monitor.collector import Collector
from monitor.health import HealthEngine, HealthStage
from monitor.store import Store
from monitor.store.alerts import read_alerts, read_delivered_firing, read_outbox, write_silence

SECRET_URL = "alertmanager://lagmon:s3cret@127.0.0.1:9/am"
DASH = "http://dash.local/"
RULES = parse_rules(
    """
rules:
  - {name: lag-high, kind: lag_offsets, above: 100, labels: {team: payments}}
  - {name: lag-for-an-hour, kind: lag_offsets, above: 100, for: 1h}
""",
    "rules.yaml",
    {"am": SECRET_URL},
)


def iso(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Setup:
    """LagSwitch -> collector with the health stage and alert engine -> outbox -> a sender whose posts are kept."""

    def __init__(self, engine, groups=("g1", "g2", "g3")):
        self.engine = engine
        self.clock = T0
        self.switch = LagSwitch("c", groups, now=lambda: self.clock)
        self.posts: list[tuple[str, list[dict]]] = []
        self.up = True
        self.reports = log_records("lagmon.alerts")  # what the sender logs
        stage = HealthStage(engine, HealthEngine("c", RULES.evaluator))
        alerts = AlertEngine(engine, "c", RULES, dashboard_url=DASH, now_ms=self.switch.now)
        self.collector = Collector(
            self.switch, Store(engine), "c", now_ms=self.switch.now, health=stage, observers=[alerts]
        )
        self.sender = self.new_sender()

    def new_sender(self) -> OutboxSender:
        return OutboxSender(
            self.engine,
            "c",
            RULES.channels,
            post=self.post,
            dashboard_url=DASH,
            resend_s=60,
            now_ms=lambda: self.clock,
        )

    def post(self, url: str, alerts: list[dict]) -> bool:
        if not self.up:
            raise ChannelError("cannot reach Alertmanager (Connection refused)")
        self.posts.append((url, alerts))
        return True

    def poll(self, lagging: set[str]) -> None:
        self.switch.lagging = lagging
        self.collector.poll_once()

    def take(self) -> list[tuple[str, str]]:
        """(group label, endsAt) of each alert posted since the last take (by group: the order alerts open in
        within a cycle is the report's, a set's)."""
        out = sorted((a["labels"]["group"], a["endsAt"]) for _, alerts in self.posts for a in alerts)
        self.posts.clear()
        return out


def test_rows_post_the_rule_labels_and_the_message_then_end_when_resolved(db_engine):
    s = Setup(db_engine)
    write_silence(db_engine, {"group": "^g3$"}, T0 + 3600_000, T0)
    s.poll({"g1", "g2", "g3"})  # lag-high fires for all three (g3 silenced: no message); lag-for-an-hour pends
    assert [(r.kind, r.channel) for r in read_outbox(db_engine)] == [("firing", "am"), ("firing", "am")]
    s.clock += 500
    s.sender.drain_once()
    assert [url for url, _ in s.posts] == [SECRET_URL, SECRET_URL]
    (first,) = [a for _, alerts in s.posts for a in alerts if a["labels"]["group"] == "g1"]
    assert first["labels"] == {
        "alertname": "lag-high",
        "severity": "warning",
        "cluster": "c",
        "group": "g1",
        "source": "lagmon",
        "team": "payments",
    }
    assert first["startsAt"] == iso(T0) and first["endsAt"] == iso(T0 + 500 + 4 * 60_000)
    assert first["generatorURL"] == first["annotations"]["dashboard"]
    assert first["generatorURL"].startswith(DASH + "?page=group&group=g1&cluster=c")
    assert first["annotations"]["summary"] == "g1 @ c: lag 500 offsets (above 100)"
    assert first["annotations"]["description"].startswith("lag 500 offsets (above 100)\nLag: 500 offsets")
    assert s.take() == [("g1", iso(T0 + 240_500)), ("g2", iso(T0 + 240_500))]

    s.clock += 10_000
    s.poll({"g2", "g3"})  # g1 caught up
    resolved_at = s.clock
    s.sender.drain_once()
    assert s.take() == [("g1", iso(resolved_at))]
    assert all(r.sent_at is not None for r in read_outbox(db_engine))
    assert {a.group_id: a.state for a in read_alerts(db_engine, "c") if a.rule == "lag-high"} == {
        "g2": "firing",
        "g3": "firing",
    }


def test_firing_alerts_are_posted_again_every_interval_until_they_resolve(db_engine):
    s = Setup(db_engine)
    write_silence(db_engine, {"group": "^g3$"}, T0 + 3600_000, T0)
    s.poll({"g1", "g2", "g3"})
    assert read_delivered_firing(db_engine, ["am"], "c") == []  # queued, not delivered: the outbox's job
    s.sender.drain_once()
    s.take()
    # Only the alerts whose firing message this channel took: not the silenced g3, not the pending rule.
    assert sorted((c, a.rule, a.group_id) for c, a in read_delivered_firing(db_engine, ["am"], "c")) == [
        ("am", "lag-high", "g1"),
        ("am", "lag-high", "g2"),
    ]
    assert s.sender.repost_once() == 60.0  # due at once after a start, then a minute later
    assert len(s.posts) == 1 and s.take() == [("g1", iso(T0 + 240_000)), ("g2", iso(T0 + 240_000))]
    s.clock += 59_000
    assert s.sender.repost_once() == 1.0 and s.posts == []
    s.clock += 1_000
    s.sender.repost_once()
    assert s.take() == [("g1", iso(T0 + 300_000)), ("g2", iso(T0 + 300_000))]  # endsAt moves on

    s.poll({"g2", "g3"})  # g1 resolves: its resolution is queued, and it is no longer posted as firing
    assert [(a.group_id) for _, a in read_delivered_firing(db_engine, ["am"], "c")] == ["g2"]
    s.sender.drain_once()
    s.clock += 60_000
    s.sender.repost_once()
    assert s.take() == [("g1", iso(T0 + 60_000)), ("g2", iso(T0 + 360_000))]

    # A restarted sender sends no message twice; it posts what still fires at once, which Alertmanager
    # takes as the same alert (same labels).
    s.sender = s.new_sender()
    s.sender.drain_once()
    assert s.posts == []
    s.sender.repost_once()
    assert s.take() == [("g2", iso(T0 + 360_000))]
    assert read_delivered_firing(db_engine, [], "c") == []


def test_an_unreachable_alertmanager_keeps_the_rows_and_says_so_once_without_the_url(sqlite_engine):
    s = Setup(sqlite_engine, groups=("g1",))
    s.up = False
    s.poll({"g1"})
    s.sender.drain_once()
    (row,) = read_outbox(sqlite_engine)
    assert (row.attempts, row.sent_at) == (1, None)
    assert row.last_error == "channel 'am': cannot reach Alertmanager (Connection refused)"
    for _ in range(3):
        s.clock += 60_000
        s.sender.drain_once()
    assert read_outbox(sqlite_engine)[0].attempts == 4
    s.up = True
    s.clock += 60_000
    s.sender.drain_once()
    assert s.take() == [("g1", iso(s.clock + 240_000))]
    assert (read_outbox(sqlite_engine)[0].attempts, read_outbox(sqlite_engine)[0].sent_at) == (5, s.clock)

    # Re-posts that fail are tried again with backoff, never later than the interval, and said once.
    s.sender.repost_once()
    s.take()
    s.up = False
    s.clock += 60_000
    assert s.sender.repost_once() == 1.0
    s.clock += 1_000
    assert s.sender.repost_once() == 2.0
    s.up = True
    s.clock += 2_000
    assert s.sender.repost_once() == 60.0 and len(s.take()) == 1
    assert s.reports == [
        "alert message not sent, will retry: channel 'am': cannot reach Alertmanager (Connection refused)",
        "alertmanager channel 'am': firing alerts not posted again, will retry: "
        "cannot reach Alertmanager (Connection refused)",
        "alertmanager channel 'am': firing alerts posted again",
    ]
    with sqlite_engine.connect() as conn:
        stored = " ".join(str(v) for row in conn.execute(sa.text("SELECT * FROM alert_outbox")) for v in row)
    assert "s3cret" not in stored and "127.0.0.1" not in stored and not any("s3cret" in r for r in s.reports)
