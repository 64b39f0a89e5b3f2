"""Status history, alert episodes, silences and the outbox: read_*/write_* over the alerts block of schema.py.

An alert's state change and the notifications it causes are written in ONE
transaction, so after a crash either both exist or neither: a restarted
collector neither re-fires a firing alert nor forgets a queued message.
The outbox is drained by the sender threads of every collector on the store; each row
is claimed by one of them before it is sent, and counts as delivered only once its
channel accepted it (sent_at set).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from monitor.models import FIRING, PENDING, RESOLVED, Alert, LagmonError, Notification, Silence
from monitor.store.engine import write_engine
from monitor.store.schema import (
    alert_outbox,
    alert_silences,
    alerts,
    group_status,
    partition_status,
)
from monitor.store.sql import dumps_json


@dataclass(frozen=True)
class OutboxRow:
    id: int
    alert_id: int
    channel: str
    kind: str
    title: str
    body: str
    created_at: int
    attempts: int
    next_attempt_at: int
    sent_at: int | None
    last_error: str | None
    claimed_by: str | None = None  # the sender that took it last
    claimed_until: int | None = None  # while set and ahead, no other sender may take it


# -- alerts ---------------------------------------------------------------------------------


def _alert(row) -> Alert:
    return Alert(
        rule=row.rule,
        cluster=row.cluster,
        group_id=row.group_id,
        topic=row.topic,
        state=row.state,
        severity=row.severity,
        started_at=row.started_at,
        fired_at=row.fired_at,
        resolved_at=row.resolved_at,
        last_notified_at=row.last_notified_at,
        summary=row.summary,
        detail=json.loads(row.detail),
        labels=json.loads(row.labels),
        acked_at=row.acked_at,
        acked_by=row.acked_by,
        id=row.id,
    )


def _alert_values(a: Alert) -> dict:
    return {
        "cluster": a.cluster,
        "rule": a.rule,
        "group_id": a.group_id,
        "topic": a.topic,
        "state": a.state,
        "severity": a.severity,
        "started_at": a.started_at,
        "fired_at": a.fired_at,
        "resolved_at": a.resolved_at,
        "last_notified_at": a.last_notified_at,
        "summary": a.summary,
        "detail": dumps_json(a.detail),
        "labels": dumps_json(a.labels),
    }


def read_open_alerts(engine: Engine, cluster: str) -> list[Alert]:
    """Pending and firing alerts of a cluster."""
    with engine.connect() as conn:
        return [
            _alert(r)
            for r in conn.execute(
                sa.select(alerts)
                .where(alerts.c.cluster == cluster, alerts.c.state.in_([PENDING, FIRING]))
                .order_by(alerts.c.id)
            )
        ]


def read_open_acks(engine: Engine, cluster: str) -> dict[int, tuple[int, str | None]]:
    """id -> (acked_at, acked_by) of the open alerts someone acknowledged (the dashboard or the CLI)."""
    a = alerts
    with engine.connect() as conn:
        return {
            i: (at, by)
            for i, at, by in conn.execute(
                sa.select(a.c.id, a.c.acked_at, a.c.acked_by).where(
                    a.c.cluster == cluster, a.c.state.in_([PENDING, FIRING]), a.c.acked_at.is_not(None)
                )
            )
        }


def read_alerts(engine: Engine, cluster: str | None = None, resolved_since: int | None = None) -> list[Alert]:
    """Firing and pending alerts, plus those that fired and resolved at or after `resolved_since`."""
    a = alerts
    shown = a.c.state.in_([PENDING, FIRING])
    if resolved_since is not None:
        shown = sa.or_(
            shown, sa.and_(a.c.state == RESOLVED, a.c.fired_at.is_not(None), a.c.resolved_at >= resolved_since)
        )
    query = sa.select(a).where(shown).order_by(a.c.started_at, a.c.id)
    if cluster is not None:
        query = query.where(a.c.cluster == cluster)
    with engine.connect() as conn:
        return [_alert(r) for r in conn.execute(query)]


def read_alert(engine: Engine, alert_id: int) -> Alert | None:
    """One alert episode by id (None once retention dropped it)."""
    with engine.connect() as conn:
        row = conn.execute(sa.select(alerts).where(alerts.c.id == alert_id)).first()
    return None if row is None else _alert(row)


def read_delivered_firing(engine: Engine, channels: Iterable[str], cluster: str) -> list[tuple[str, Alert]]:
    """(channel, alert) for every firing alert of `cluster` whose newest message on that channel was delivered
    and was not its resolution: what a channel that must be told again and again that an alert still fires
    (Alertmanager) re-posts. A channel with a message still queued for the alert is left to the outbox."""
    channels = list(channels)
    if not channels:
        return []
    a, o = alerts, alert_outbox
    firing = sa.select(a.c.id).where(a.c.state == FIRING, a.c.cluster == cluster)
    newest = (
        sa.select(sa.func.max(o.c.id).label("id"))
        .where(o.c.channel.in_(channels), o.c.alert_id.in_(firing))
        .group_by(o.c.alert_id, o.c.channel)
    )
    query = (
        sa.select(a, o.c.channel.label("outbox_channel"))
        .join(o, o.c.alert_id == a.c.id)
        .where(o.c.id.in_(newest), o.c.sent_at.is_not(None), o.c.kind != RESOLVED, a.c.state == FIRING)
        .order_by(o.c.channel, a.c.id)
    )
    with engine.connect() as conn:
        return [(r.outbox_channel, _alert(r)) for r in conn.execute(query)]


def write_alert_changes(
    engine: Engine,
    changed: Iterable[Alert],
    notes: Iterable[Notification],
    now: int,
    compose: Callable[[Alert, str], tuple[str, str]],
) -> list[Alert]:
    """Store new/changed alerts and queue their notifications in one transaction; returns the alerts with ids."""
    stored: dict[tuple, Alert] = {}
    notes = list(notes)
    updates = []
    with write_engine(engine).begin() as conn:
        for alert in changed:
            values = _alert_values(alert)
            if alert.id is None:
                new_id = conn.execute(alerts.insert().values(**values)).inserted_primary_key[0]
                alert = replace(alert, id=new_id)
            else:
                updates.append({"alert_id": alert.id, **values})
            stored[alert.key] = alert
        if updates:  # one statement for all: most cycles only refresh the numbers of held alerts
            conn.execute(alerts.update().where(alerts.c.id == sa.bindparam("alert_id")), updates)
        rows = []
        for note in notes:
            alert = stored[note.key]
            title, body = compose(alert, note.kind)
            rows += [
                {
                    "alert_id": alert.id,
                    "channel": channel,
                    "kind": note.kind,
                    "title": title,
                    "body": body,
                    "created_at": now,
                    "attempts": 0,
                    "next_attempt_at": now,
                }
                for channel in note.channels
            ]
        if rows:
            conn.execute(alert_outbox.insert(), rows)
    return list(stored.values())


def write_ack(engine: Engine, alert_id: int, by: str, now: int) -> None:
    """Acknowledge a firing alert: no more repeats; its resolution is still sent."""
    with write_engine(engine).begin() as conn:
        if conn.execute(alerts.update().where(alerts.c.id == alert_id).values(acked_at=now, acked_by=by)).rowcount == 0:
            raise LagmonError(f"no alert with id {alert_id}")


def write_silence(
    engine: Engine, matchers: dict[str, str], until: int, now: int, created_by: str = "", comment: str = ""
) -> int:
    """Mute alerts whose fields fully match every regex (rule, cluster, group, topic, severity, label.NAME)."""
    for name, pattern in matchers.items():
        try:
            re.compile(pattern)
        except re.error as e:
            raise LagmonError(f"silence matcher {name}: {pattern!r} is not a regular expression ({e})") from e
    with write_engine(engine).begin() as conn:
        return conn.execute(
            alert_silences.insert().values(
                matchers=dumps_json(matchers),
                until=until,
                created_at=now,
                created_by=created_by,
                comment=comment,
            )
        ).inserted_primary_key[0]


def write_silence_end(engine: Engine, silence_id: int, now: int) -> None:
    """Expire a silence now (the row stays until alert retention drops it)."""
    with write_engine(engine).begin() as conn:
        if (
            conn.execute(
                alert_silences.update()
                .where(alert_silences.c.id == silence_id, alert_silences.c.until > now)
                .values(until=now)
            ).rowcount
            == 0
        ):
            raise LagmonError(f"no silence with id {silence_id} is in force")


def read_silences(engine: Engine, now: int) -> list[Silence]:
    """Silences still in force at `now`."""
    s = alert_silences
    with engine.connect() as conn:
        return [
            Silence(json.loads(r.matchers), r.until, r.id, r.comment, r.created_by)
            for r in conn.execute(sa.select(s).where(s.c.until > now).order_by(s.c.id))
        ]


# -- outbox ---------------------------------------------------------------------------------


def read_outbox(engine: Engine, pending_only: bool = False, cluster: str | None = None) -> list[OutboxRow]:
    """Queued notifications, oldest first: all, or only those not yet delivered; of one cluster, or of all."""
    o = alert_outbox
    query = sa.select(o).order_by(o.c.id)
    if pending_only:
        query = query.where(o.c.sent_at.is_(None))
    if cluster is not None:
        query = query.where(o.c.alert_id.in_(sa.select(alerts.c.id).where(alerts.c.cluster == cluster)))
    with engine.connect() as conn:
        return [
            OutboxRow(
                r.id,
                r.alert_id,
                r.channel,
                r.kind,
                r.title,
                r.body,
                r.created_at,
                r.attempts,
                r.next_attempt_at,
                r.sent_at,
                r.last_error,
                r.claimed_by,
                r.claimed_until,
            )
            for r in conn.execute(query)
        ]


def claim_outbox_row(engine: Engine, row_id: int, sender: str, now: int, lease_ms: int) -> bool:
    """Take a queued row for `lease_ms`; False when it was sent meanwhile or another sender holds it.

    One conditional UPDATE, so of senders racing for a row exactly one wins, on SQLite (one writer at a
    time) and on PostgreSQL (the loser's UPDATE re-reads the row once the winner commits).
    """
    o = alert_outbox
    free = sa.or_(o.c.claimed_until.is_(None), o.c.claimed_until <= now, o.c.claimed_by == sender)
    with write_engine(engine).begin() as conn:
        taken = conn.execute(
            o.update()
            .where(o.c.id == row_id, o.c.sent_at.is_(None), free)
            .values(claimed_by=sender, claimed_until=now + lease_ms)
        )
        return taken.rowcount == 1


def write_outbox_result(
    engine: Engine, row_id: int, sender: str, now: int, error: str | None, retry_at: int | None
) -> bool:
    """Under `sender`'s claim, mark a row delivered (error None) or count a failed attempt and schedule the
    next one, and let the claim go. False when the claim had lapsed and another sender took the row."""
    o = alert_outbox
    done = {"attempts": o.c.attempts + 1, "claimed_until": None}
    if error is None:
        done |= {"sent_at": now, "last_error": None}
    else:
        done |= {"last_error": error, "next_attempt_at": retry_at}
    with write_engine(engine).begin() as conn:
        marked = conn.execute(o.update().where(o.c.id == row_id, o.c.claimed_by == sender).values(**done))
        return marked.rowcount == 1


# -- retention --------------------------------------------------------------------------------

ALERT_RETENTION_MS = 35 * 86_400_000  # as long as the 10-minute lag rollups are kept


def apply_alert_retention(engine: Engine, cluster: str, now: int, keep_ms: int = ALERT_RETENTION_MS) -> int:
    """Drop what is older than `keep_ms`: resolved alerts with their delivered messages, expired silences,
    and superseded status rows (each series keeps its newest row, so the status now stays known).

    An alert with a message still waiting in the outbox is kept. Returns the rows deleted.
    """
    cutoff = now - keep_ms
    a, o, ps, gs, si = alerts, alert_outbox, partition_status, group_status, alert_silences
    waiting = sa.select(o.c.alert_id).where(o.c.sent_at.is_(None))
    old = sa.select(a.c.id).where(
        a.c.cluster == cluster, a.c.state == RESOLVED, a.c.resolved_at < cutoff, a.c.id.not_in(waiting)
    )
    newest_p = (
        sa.select(sa.func.max(ps.c.id))
        .where(ps.c.cluster == cluster)
        .group_by(ps.c.group_id, ps.c.topic, ps.c.partition)
    )
    newest_g = sa.select(sa.func.max(gs.c.id)).where(gs.c.cluster == cluster).group_by(gs.c.group_id)
    deleted = 0
    with write_engine(engine).begin() as conn:
        deleted += conn.execute(o.delete().where(o.c.alert_id.in_(old))).rowcount
        deleted += conn.execute(a.delete().where(a.c.id.in_(old))).rowcount
        deleted += conn.execute(
            ps.delete().where(ps.c.cluster == cluster, ps.c.at < cutoff, ps.c.id.not_in(newest_p))
        ).rowcount
        deleted += conn.execute(
            gs.delete().where(gs.c.cluster == cluster, gs.c.at < cutoff, gs.c.id.not_in(newest_g))
        ).rowcount
        deleted += conn.execute(si.delete().where(si.c.until < cutoff)).rowcount
    return deleted
