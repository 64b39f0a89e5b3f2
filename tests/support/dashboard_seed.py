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
from pathlib import Path

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
APP = str(Path(__file__).resolve().parents[2] / "app.py")
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
        return (
            Member(a.member_id, a.client_id, a.host, assignment=(ORDERS[0], ORDERS[1])),
            Member(b.member_id, b.client_id, b.host, assignment=(ORDERS[2],)),
            Member(c.member_id, c.client_id, c.host, assignment=(ORDERS[3],)),
        )
    return (
        Member(a.member_id, a.client_id, a.host, assignment=(ORDERS[0], ORDERS[1])),
        Member(b.member_id, b.client_id, b.host, assignment=(ORDERS[2], ORDERS[3])),
    )


def snapshot_at(cluster: str, i: int, at: int) -> ClusterSnapshot:
    log_end = {tp: 100_000 + i * 200 + tp.partition * 1_000 for tp in ORDERS}
    log_end |= {tp: 50_000 + i * 20 + tp.partition for tp in PAYMENTS}
    log_end |= dict.fromkeys(EVENTS_TP, 7_000 + i)
    rebalancing = i in (60, 120)  # the sample at which a member joined / left
    orders = GroupSnapshot(
        "orders-app",
        GroupState.PREPARING_REBALANCE if rebalancing else GroupState.STABLE,
        GroupType.CLASSIC,
        assignor="range",
        coordinator=1,
        members=_members(i) if not rebalancing else _members(i - 1)[:0],
        committed={tp: log_end[tp] - _orders_lag(i) for tp in ORDERS},
    )
    billing = GroupSnapshot(
        "billing",
        GroupState.STABLE,
        GroupType.CLASSIC,
        assignor="range",
        coordinator=1,
        members=(Member("billing-1-xxxx", "billing-1", "/10.0.1.1", assignment=tuple(PAYMENTS)),),
        committed={tp: log_end[tp] for tp in PAYMENTS},
    )
    kip = GroupSnapshot(
        "kip-app",
        GroupState.RECONCILING,
        GroupType.CONSUMER,
        assignor="uniform",
        coordinator=1,
        members=(Member("kip-1-yyyy", "kip-1", "/10.0.2.1", assignment=(), target_assignment=tuple(EVENTS_TP)),),
        committed={EVENTS_TP[0]: log_end[EVENTS_TP[0]] - 5},
        state_inferred=True,
    )
    html = GroupSnapshot(
        HTML_GROUP,
        GroupState.EMPTY,
        GroupType.CLASSIC,
        coordinator=1,
        committed={EVENTS_TP[0]: log_end[EVENTS_TP[0]] - 3},
    )
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
    from monitor.store.alerts import write_alert_changes
    from monitor.store.health import write_status_changes

    c, at = info.cluster, lambda i: info.first_at + i * STEP_MS
    write_status_changes(
        engine,
        c,
        at(0),
        [("orders-app", tp, Status.OK) for tp in ORDERS] + [("billing", tp, Status.OK) for tp in PAYMENTS],
        [("orders-app", Status.OK, Status.OK, 40, 1.0), ("billing", Status.OK, Status.OK, 0, 1.0)],
    )
    write_status_changes(
        engine,
        c,
        at(60),
        [("orders-app", tp, Status.WARN) for tp in ORDERS],
        [("orders-app", Status.WARN, Status.WARN, 1000, 1.0)],
    )
    write_status_changes(
        engine,
        c,
        at(150),
        [("orders-app", tp, Status.OK) for tp in ORDERS[:3]] + [("orders-app", ORDERS[3], Status.STALL)],
        [("orders-app", Status.WARN, Status.STALL, 40, 1.0)],
    )
    alerts = [
        Alert(
            FIRING_RULE,
            c,
            "orders-app",
            "",
            FIRING,
            "warning",
            started_at=at(100),
            fired_at=at(110),
            summary="orders-app is 60 s behind",
        ),
        Alert(PENDING_RULE, c, "kip-app", "", PENDING, "critical", started_at=at(170), summary="kip-app status WARN"),
        Alert(
            RESOLVED_RULE,
            c,
            "billing",
            "",
            RESOLVED,
            "warning",
            started_at=at(80),
            fired_at=at(90),
            resolved_at=at(120),
            summary="billing has fewer than 2 members",
        ),
    ]
    stored = write_alert_changes(engine, alerts, [], at(SAMPLES - 1), lambda a, kind: ("", ""))
    return {a.state: a.id for a in stored}


HOUR_MS, DAY_MS = 3_600_000, 86_400_000


def trend_row(
    cluster: str,
    group: str,
    bucket_start: int,
    *,
    produce: float,
    consume: float,
    lag_last: int,
    p50: float | None = None,
    p95: float | None = None,
    bounded: bool = False,
    topic: str = "",
    window: str = "1h",
) -> dict:
    """One lag_trends row as the Spark job writes it (ETA and catching_up derived the same way)."""
    net = consume - produce
    eta = 0.0 if lag_last == 0 else (lag_last / net if net > 0 else None)
    return {
        "cluster": cluster,
        "group_id": group,
        "topic": topic,
        "window": window,
        "bucket_start": bucket_start,
        "samples": 360,
        "lag_avg": lag_last * 0.8,
        "lag_max": lag_last + 100,
        "lag_p95": lag_last * 1.1,
        "lag_last": lag_last,
        "lag_slope_per_min": -net * 60,
        "produce_rate": produce,
        "consume_rate": consume,
        "catch_up_eta_s": eta,
        "catching_up": lag_last == 0 or net > 0,
        "lag_seconds_avg": p50,
        "lag_seconds_max": p95,
        "lag_seconds_p50": p50,
        "lag_seconds_p95": p95,
        "lag_seconds_bounded": bounded,
    }


def seed_analysis(engine, info: Seeded) -> int:
    """One successful Spark run's results for `info`'s cluster, through spark/load.py's writer; the run id.

    orders-app catches up (25 > 20 msg/s, 1,500 behind: ETA 300 s); billing does not
    (12.5 produced, 10 consumed per second; its lag seconds only a lower bound); kip-app
    is the least stable group, then orders-app.
    """
    from spark.load import Results, RunRecord, write_results

    c, hour = info.cluster, info.last_at // HOUR_MS * HOUR_MS
    day = info.last_at // DAY_MS * DAY_MS
    trends = [
        trend_row(c, "orders-app", hour - HOUR_MS, produce=18.0, consume=15.0, lag_last=1800, p50=3.0, p95=9.0),
        trend_row(c, "orders-app", hour, produce=20.0, consume=25.0, lag_last=1500, p50=4.0, p95=12.5),
        trend_row(c, "orders-app", hour, produce=20.0, consume=25.0, lag_last=1500, topic="orders"),
        trend_row(c, "billing", hour, produce=12.5, consume=10.0, lag_last=700, p50=30.0, p95=45.0, bounded=True),
    ]
    stats = [
        {
            "cluster": c,
            "group_id": "orders-app",
            "window": "1d",
            "bucket_start": day,
            "protocol": "eager",
            "rebalances": 2,
            "completed": 2,
            "total_duration_ms": 40_000,
            "mean_duration_ms": 20_000.0,
            "p95_duration_ms": 20_000.0,
            "max_duration_ms": 20_000,
            "partitions_moved": 2,
            "members_joined": 1,
            "members_left": 1,
            "triggers": '{"member_joined": 1, "member_left": 1}',
            "top_members": '[{"name": "orders-3", "rebalances": 2}]',
            "top_hosts": '[{"name": "/10.0.0.3", "rebalances": 2}]',
            "top_clients": '[{"name": "orders-3", "rebalances": 2}]',
        }
    ]
    window = {"window_start": info.last_at - DAY_MS, "window_end": info.last_at}
    ranking = [
        {
            "cluster": c,
            "group_id": g,
            "rank": rank,
            **window,
            "protocol": protocol,
            "rebalances": n,
            "per_hour": n / 24,
            "total_duration_ms": n * 5_000,
            "mean_duration_ms": 5_000.0,
            "partitions_moved": n,
        }
        for rank, (g, protocol, n) in enumerate([("kip-app", "consumer", 9), ("orders-app", "eager", 2)], 1)
    ]
    protocols = [
        {
            "cluster": c,
            "protocol": p,
            **window,
            "groups": 1,
            "rebalances": n,
            "per_group": float(n),
            "mean_duration_ms": 5_000.0,
            "p95_duration_ms": 8_000.0,
            "mean_partitions_moved": 1.0,
        }
        for p, n in (("consumer", 9), ("eager", 2))
    ]
    results = Results(trends, stats, ranking, protocols, {"1h": (hour - HOUR_MS, hour)}, {"1d": (day, day)})
    return write_results(engine, RunRecord(info.last_at, 400, 1234, info.first_at, info.last_at, "local[2]"), results)


def seed_tail(engine, info: Seeded) -> None:
    """The offsets-topic tail's position: partition 0 read to offset 5,000, partition 7 to 42."""
    from monitor.offsets_topic.history import TailUpdate
    from monitor.store.offsets_tail import write_tail_update

    write_tail_update(Store(engine), info.cluster, TailUpdate(positions={0: 5_000, 7: 42}), info.last_at)


def open_app(*, secrets: dict | None = None, user: dict | None = None, **params):
    """The dashboard in Streamlit's AppTest with these query parameters, run once, with no exception shown.

    `secrets` stand in for .streamlit/secrets.toml (an `auth` section configures the login) and
    `user` for st.user (`{"is_logged_in": True, "email": ...}` is a logged-in user).
    """
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=30)
    if secrets is not None:
        at.secrets.update(secrets)
    if user is not None:
        at.user = user
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert [e.value for e in at.exception] == []
    return at
