"""A realistic half hour of one cluster, written through the real Store and the real snapshot diff.

`orders-app` (classic, eager, range) reads `orders` (4 partitions) with two
members; at minute 10 a third member joins for ten minutes (two rebalances:
one join, one leave, each a sample in PreparingRebalance). Its lag grows to a
peak at minute 15 and falls back. `billing` keeps up with `payments`; `kip-app`
is a KIP-848 group seen Reconciling (inferred). `<b>x</b>` is a group whose name
looks like HTML, to check it is shown as text.
"""
from __future__ import annotations

from dataclasses import dataclass

from monitor.events import compute_changes, compute_tracker
from monitor.models import (
    ClusterSnapshot,
    GroupSnapshot,
    GroupState,
    GroupType,
    Member,
    PartitionOffsets,
    TopicPartition,
)
from monitor.store import Store

TP = TopicPartition
STEP_MS = 10_000
SAMPLES = 180  # 30 minutes
ORDERS = [TP("orders", p) for p in range(4)]
PAYMENTS = [TP("payments", p) for p in range(2)]
EVENTS_TP = [TP("events", 0)]
HTML_GROUP = "<b>x</b>"


@dataclass(frozen=True)
class Seeded:
    cluster: str
    first_at: int
    last_at: int
    final: ClusterSnapshot  # what "now" looks like: tests compute expected numbers from it


def _orders_lag(i: int) -> int:
    """Per-partition lag of orders-app at sample i: up to 250 at minute 15, back near 10 at the end."""
    peak = 90
    return max(10, 250 - abs(i - peak) * 3) if 60 <= i <= 150 else 10


def _members(i: int) -> tuple[Member, ...]:
    a = Member("orders-1-aaaa", "orders-1", "/10.0.0.1")
    b = Member("orders-2-bbbb", "orders-2", "/10.0.0.2")
    if 60 <= i < 120:
        c = Member("orders-3-cccc", "orders-3", "/10.0.0.3")
        return (Member(a.member_id, a.client_id, a.host, assignment=(ORDERS[0], ORDERS[1])),
                Member(b.member_id, b.client_id, b.host, assignment=(ORDERS[2],)),
                Member(c.member_id, c.client_id, c.host, assignment=(ORDERS[3],)))
    return (Member(a.member_id, a.client_id, a.host, assignment=(ORDERS[0], ORDERS[1])),
            Member(b.member_id, b.client_id, b.host, assignment=(ORDERS[2], ORDERS[3])))


def snapshot_at(cluster: str, i: int, at: int) -> ClusterSnapshot:
    log_end = {tp: 100_000 + i * 200 + tp.partition * 1_000 for tp in ORDERS}
    log_end |= {tp: 50_000 + i * 20 + tp.partition for tp in PAYMENTS}
    log_end |= {tp: 7_000 + i for tp in EVENTS_TP}
    rebalancing = i in (60, 120)  # the sample at which a member joined / left
    orders = GroupSnapshot(
        "orders-app", GroupState.PREPARING_REBALANCE if rebalancing else GroupState.STABLE, GroupType.CLASSIC,
        assignor="range", coordinator=1, members=_members(i) if not rebalancing else _members(i - 1)[:0],
        committed={tp: log_end[tp] - _orders_lag(i) for tp in ORDERS})
    billing = GroupSnapshot(
        "billing", GroupState.STABLE, GroupType.CLASSIC, assignor="range", coordinator=1,
        members=(Member("billing-1-xxxx", "billing-1", "/10.0.1.1", assignment=tuple(PAYMENTS)),),
        committed={tp: log_end[tp] for tp in PAYMENTS})
    kip = GroupSnapshot(
        "kip-app", GroupState.RECONCILING, GroupType.CONSUMER, assignor="uniform", coordinator=1,
        members=(Member("kip-1-yyyy", "kip-1", "/10.0.2.1", assignment=(), target_assignment=tuple(EVENTS_TP)),),
        committed={EVENTS_TP[0]: log_end[EVENTS_TP[0]] - 5}, state_inferred=True)
    html = GroupSnapshot(HTML_GROUP, GroupState.EMPTY, GroupType.CLASSIC, coordinator=1,
                         committed={EVENTS_TP[0]: log_end[EVENTS_TP[0]] - 3})
    groups = {g.group_id: g for g in (orders, billing, kip, html)}
    partitions = {tp: PartitionOffsets(0, end, end) for tp, end in log_end.items()}
    return ClusterSnapshot(cluster, at, groups, partitions, duration_ms=40 + i % 7)


def seed(store: Store, now_ms: int, cluster: str = "prod") -> Seeded:
    """Write SAMPLES cycles ending at `now_ms` as the collector would (snapshot, events, rebalances)."""
    first = now_ms - (SAMPLES - 1) * STEP_MS
    prev, tracker = None, compute_tracker(None)
    for i in range(SAMPLES):
        snap = snapshot_at(cluster, i, first + i * STEP_MS)
        events, tracker, started, completed = compute_changes(prev, snap, tracker)
        store.write_snapshot(snap)
        store.write_events(cluster, events)
        store.write_rebalances(cluster, [*started, *completed])
        prev = snap
    return Seeded(cluster, first, first + (SAMPLES - 1) * STEP_MS, prev)


# -- health and alerts, written through monitor.store.alerts as the collector's alert engine does --
# orders-app: WARN from minute 10 (every partition WARN), at minute 25 back to OK except orders-3,
# which STALLs (the group stays WARN, worst STALL). billing: OK throughout. kip-app and the HTML
# group: no status stored (shown as —). Alerts: one firing (orders-app), one pending (kip-app),
# one that fired and resolved at minute 20 (billing).
FIRING_RULE, PENDING_RULE, RESOLVED_RULE = "lag_seconds_high", "status_bad", "members_low"


def seed_health(engine, info: Seeded) -> dict[str, int]:
    """Status rows and alert episodes for `info`'s cluster; returns alert ids by state."""
    from monitor.alerts.lifecycle import FIRING, PENDING, RESOLVED, Alert
    from monitor.models import Status
    from monitor.store.alerts import write_alert_changes, write_status_changes

    c, at = info.cluster, lambda i: info.first_at + i * STEP_MS
    write_status_changes(engine, c, at(0), [("orders-app", tp, Status.OK) for tp in ORDERS]
                         + [("billing", tp, Status.OK) for tp in PAYMENTS],
                         [("orders-app", Status.OK, Status.OK, 40, 1.0), ("billing", Status.OK, Status.OK, 0, 1.0)])
    write_status_changes(engine, c, at(60), [("orders-app", tp, Status.WARN) for tp in ORDERS],
                         [("orders-app", Status.WARN, Status.WARN, 1000, 1.0)])
    write_status_changes(engine, c, at(150), [("orders-app", tp, Status.OK) for tp in ORDERS[:3]]
                         + [("orders-app", ORDERS[3], Status.STALL)],
                         [("orders-app", Status.WARN, Status.STALL, 40, 1.0)])
    alerts = [
        Alert(FIRING_RULE, c, "orders-app", "", FIRING, "warning", started_at=at(100), fired_at=at(110),
              summary="orders-app is 60 s behind"),
        Alert(PENDING_RULE, c, "kip-app", "", PENDING, "critical", started_at=at(170),
              summary="kip-app status WARN"),
        Alert(RESOLVED_RULE, c, "billing", "", RESOLVED, "warning", started_at=at(80), fired_at=at(90),
              resolved_at=at(120), summary="billing has fewer than 2 members"),
    ]
    stored = write_alert_changes(engine, alerts, [], at(SAMPLES - 1), lambda a, kind: ("", ""))
    return {a.state: a.id for a in stored}
