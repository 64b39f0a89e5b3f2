"""The alert engine: rules -> alert lifecycle -> outbox, on the health engine's report.

It judges nothing itself: each cycle it reads the HealthReport (monitor.health),
turns it into conditions, moves alerts through pending -> firing -> resolved and
queues notifications in the outbox, which the sender thread delivers. Its work
follows what changed: a group's conditions are evaluated again only when the
report changed its entry, when the group holds a condition (to refresh it or
resolve it), when it had recent rebalances or coordinator moves, or when one of
its lag clocks is due to cross a lag_seconds threshold; every other group keeps
last cycle's conditions, whose numbers (lag, lag seconds) are refreshed at
least every minute. Likewise only the alerts that can change go through the
lifecycle: those of groups evaluated again, and those whose timer (`for`,
`repeat`) is due. Open alerts live in the database, so a restarted collector
neither re-fires nor forgets; the engine keeps them in memory too and reads back
only the acknowledgements that the dashboard or the CLI add.
A collector shard judges only its own groups: it loads, resolves and fires only
their alerts, and its cluster-wide alerts (collector health) carry the shard
in the topic field ("shard 2/3"), so shards never resolve each other's alerts.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import replace

from sqlalchemy.engine import Engine

from monitor.alerts.lifecycle import (
    NO_EVENTS,
    Condition,
    GroupEvents,
    WorkerRestart,
    compute_alert_changes,
    compute_alert_due,
    evaluate_cluster_rules,
    evaluate_group_rules,
)
from monitor.alerts.message import compose_message
from monitor.alerts.rules import RuleKind, RuleSet
from monitor.clock import wall_ms
from monitor.config import AlertSettings
from monitor.health.report import GroupHealth, HealthReport
from monitor.logs import get_logger
from monitor.models import RESOLVED, Alert, EventKind, Notification
from monitor.ports import Sender
from monitor.shard import UNSHARDED, Shard
from monitor.store import read_events, read_rebalances
from monitor.store.alerts import (
    apply_alert_retention,
    read_open_acks,
    read_open_alerts,
    read_silences,
    write_alert_changes,
)

log = get_logger("alert-states")  # apart from the senders' "alerts": each alert's state changes
RETENTION_EVERY_MS = 3600_000  # old alerts, status rows and silences are dropped this often
REFRESH_MS = 60_000  # a held condition's numbers are evaluated again at least this often
# conditions that expire with time, not with the report (share_redelivery: an archived rise `within` ago)
EVENT_KINDS = (RuleKind.REBALANCES, RuleKind.COORDINATOR_MOVED, RuleKind.SHARE_REDELIVERY)


class AlertEngine:
    def __init__(
        self,
        engine: Engine,
        cluster: str,
        rules: RuleSet,
        *,
        dashboard_url: str | None = None,
        sender: Sender | None = None,
        shard: Shard = UNSHARDED,
        now_ms: Callable[[], int] = wall_ms,
        retention_now: Callable[[], int] | None = None,
        restart: WorkerRestart | None = None,
    ):
        self.engine = engine
        self.shard = shard
        self.cluster = cluster
        self.rules = rules
        self.dashboard_url = dashboard_url
        self.sender = sender
        self.now_ms = now_ms
        self.retention_now = retention_now  # None: the cycle's time (monitor.clock.RetentionClock in `collect`)
        self.restart = restart  # this worker's predecessor died: the collector-health rule says so a while
        self.last_ok_at: int | None = None
        self._conditions: dict[str, list[Condition]] = {}  # group -> conditions that held when last evaluated
        self._evaluated_at: dict[str, int] = {}  # group holding a condition -> when it was last evaluated
        self._open: dict[tuple, Alert] | None = None  # this shard's pending and firing alerts
        self._version = shard.version  # of what the shard owns: when it moves, the open alerts are read again
        self._due: dict[str, int] = {}  # group -> when a lag clock crosses the lowest lag_seconds threshold
        self._lag_s_above = min((r.above for r in rules.rules if r.kind == RuleKind.LAG_SECONDS), default=None)
        self._retained_at = 0
        self._previous_at: int | None = None  # the cycle before: open alerts' numbers refresh once a minute

    def __call__(self, result, snapshot, report: HealthReport | None) -> list[Notification]:
        """Collector observer: the cycle's result and health report (None when the cycle failed).

        A cycle the store could not take moves no alert: what an alert says must be in the history.
        """
        if not result.stored:
            return []
        return self.observe(report, result.taken_at)

    def observe(self, report: HealthReport | None, now: int) -> list[Notification]:
        first = self._open is None
        open_alerts = self._read_open_alerts()
        touched = self._update_conditions(report) if report is not None else set()
        if report is not None:
            self.last_ok_at = report.at
        conditions = [
            replace(c, topic=self.shard.scope)
            for c in evaluate_cluster_rules(self.rules, report is not None, self.last_ok_at, self.restart, now)
        ]
        # Only the alerts that can change: those of groups evaluated again, the cluster-wide ones and
        # the ones whose timers are due; the first cycle takes all (alerts of groups gone meanwhile resolve).
        touched.add("")
        touched.update(a.group_id for a in open_alerts.values() if compute_alert_due(a, self.rules) <= now)
        if report is not None:
            conditions += [c for g, held in self._conditions.items() if first or g in touched for c in held]
        alerts = open_alerts.values() if first else [a for a in open_alerts.values() if a.group_id in touched]
        changed, notes = compute_alert_changes(
            alerts,
            conditions,
            self.rules,
            read_silences(self.engine, now),
            self.cluster,
            now,
            sample_ok=report is not None,
            previous_at=self._previous_at,
        )
        self._previous_at = now
        if changed:
            try:
                stored = write_alert_changes(
                    self.engine,
                    changed,
                    notes,
                    now,
                    lambda alert, kind: compose_message(alert, kind, now, self.dashboard_url),
                )
            except Exception:
                self._open = None  # the rollback undid them: read the truth again next cycle
                raise
            for alert in stored:
                if (before := open_alerts.get(alert.key)) is None or before.state != alert.state:
                    where = (alert.group_id or "the cluster") + (f" ({alert.topic})" if alert.topic else "")
                    log.info("%s %s on %s: %s", alert.rule, alert.state, where, alert.summary)
                if alert.state == RESOLVED:
                    open_alerts.pop(alert.key, None)
                else:
                    open_alerts[alert.key] = alert
        if notes and self.sender is not None:
            self.sender.wake()
        if now - self._retained_at >= RETENTION_EVERY_MS and self.shard.leads:
            self._retained_at = now
            apply_alert_retention(
                self.engine, self.cluster, now if self.retention_now is None else self.retention_now()
            )
        return notes

    def _read_open_alerts(self) -> dict[tuple, Alert]:
        """Loaded once, and again when a coordinated collector's groups move; afterwards only
        acknowledgements are read back (no other collector writes these rows meanwhile)."""
        if self._version != self.shard.version:
            self._version, self._open = self.shard.version, None
        if self._open is None:
            of_cluster = read_open_alerts(self.engine, self.cluster)
            self._open = {a.key: a for a in of_cluster if self.shard.owns_alert(a.group_id, a.topic)}
            return self._open
        acks = read_open_acks(self.engine, self.cluster)
        if acks:
            for key, alert in self._open.items():
                ack = acks.get(alert.id)
                if ack is not None and (alert.acked_at, alert.acked_by) != ack:
                    self._open[key] = replace(alert, acked_at=ack[0], acked_by=ack[1])
        return self._open

    def _update_conditions(self, report: HealthReport) -> set[str]:
        """Evaluate the groups that need it again; returns them (removed groups included)."""
        at = report.at
        events = self._recent_group_events(at)
        again = set(report.changed) | set(events)
        again.update(g for g, due in self._due.items() if due <= at)
        again.update(
            g for g, held in self._conditions.items() if any(self.rules.rule(c.rule).kind in EVENT_KINDS for c in held)
        )
        again.update(self._stale(at))
        for group_id in report.removed:
            self._due.pop(group_id, None)
            self._conditions.pop(group_id, None)
            self._evaluated_at.pop(group_id, None)
        for group_id in again:
            g = report.groups.get(group_id)
            held = [] if g is None else evaluate_group_rules(self.rules, g, events.get(group_id, NO_EVENTS), at)
            if held:
                self._conditions[group_id] = held
                self._evaluated_at[group_id] = at
            else:
                self._conditions.pop(group_id, None)
                self._evaluated_at.pop(group_id, None)
            due = None if g is None else self._lag_seconds_due(g)
            if due is not None and due > at:
                self._due[group_id] = due
            else:
                self._due.pop(group_id, None)
        return again | set(report.removed)

    def _stale(self, at: int) -> list[str]:
        """The groups whose held conditions are oldest, as many as spread a refresh of all over REFRESH_MS."""
        elapsed = at - (self.last_ok_at if self.last_ok_at is not None and self.last_ok_at < at else at - 1000)
        budget = math.ceil(len(self._evaluated_at) * elapsed / REFRESH_MS)
        oldest = heapq.nsmallest(budget, self._evaluated_at.items(), key=lambda item: item[1])
        return [g for g, t in oldest if at - t >= REFRESH_MS]

    def _lag_seconds_due(self, g: GroupHealth) -> int | None:
        """When the group's oldest waiting record becomes older than the lowest lag_seconds threshold."""
        if self._lag_s_above is None:
            return None
        since = min(
            (p.clock.since for p in g.partitions if p.clock is not None and p.clock.since is not None), default=None
        )
        return None if since is None else int(since + self._lag_s_above * 1000)

    def _recent_group_events(self, now: int) -> dict[str, GroupEvents]:
        """Coordinator moves and rebalance starts inside the widest window a rule asks about."""
        kinds = {r.kind for r in self.rules.rules}
        within = max(
            (r.within_s for r in self.rules.rules if r.kind in (RuleKind.REBALANCES, RuleKind.COORDINATOR_MOVED)),
            default=0,
        )
        moves: dict[str, tuple] = {}
        starts: dict[str, tuple] = {}
        since = now - int(within * 1000)
        if RuleKind.COORDINATOR_MOVED in kinds:
            for e in read_events(self.engine, self.cluster, since=since):
                if e.kind is EventKind.COORDINATOR_MOVED:
                    moves[e.group_id] = (
                        *moves.get(e.group_id, ()),
                        (e.at, f"{e.detail.get('from')} -> {e.detail.get('to')}"),
                    )
        if RuleKind.REBALANCES in kinds:
            for row in read_rebalances(self.engine, self.cluster, since=since):
                starts[row.rebalance.group_id] = (*starts.get(row.rebalance.group_id, ()), row.rebalance.started_at)
        return {g: GroupEvents(starts.get(g, ()), moves.get(g, ())) for g in set(moves) | set(starts)}


def load_alerting(settings: AlertSettings) -> tuple[RuleSet, str | None]:
    """(rules, dashboard URL) from the alert settings; ConfigError if the rules file or a channel is broken."""
    from monitor.alerts.notify import check_channels
    from monitor.alerts.rules import load_rules

    rules = load_rules(settings.rules_file, settings.channels)
    check_channels(rules.channels)
    return rules, settings.dashboard_url
