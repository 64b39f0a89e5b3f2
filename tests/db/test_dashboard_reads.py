"""The dashboard's reads of monitor.store on a real SQLite file seeded by the Store and the real snapshot diff."""

from __future__ import annotations

import pytest
from dashboard_seed import EVENTS_TP, HTML_GROUP, ORDERS, PAYMENTS, SAMPLES, STEP_MS, seed, seed_health
from pytest import approx

from monitor.lag import TimeLag
from monitor.models import GroupState, GroupType, Status
from monitor.store import Store, lag_seconds, make_engine, upgrade
from monitor.store.engine import read_database_size, read_table_names
from monitor.store.groups import (
    AssignmentSpan,
    read_assignment_history,
    read_group_header,
    read_group_names,
    read_members,
)
from monitor.store.health import read_group_health_now, read_partition_health_now
from monitor.store.lag import read_lag_series, read_total_lag_series
from monitor.store.lag_seconds import read_lag_seconds, read_max_lag_seconds
from monitor.store.rebalances import read_rebalance_counts
from monitor.store.samples import read_thinned_sample_times, thin
from monitor.store.topics import TopicConsumer, read_topic_consumers, read_topic_partitions

NOW = 1_800_000_000_000


@pytest.fixture(scope="module")
def seeded_engine(tmp_path_factory):
    """(engine, info): one SQLite file for the module, seeded by tests/support/dashboard_seed.py with health rows."""
    engine = make_engine(f"sqlite:///{tmp_path_factory.mktemp('reads') / 'v.db'}")
    upgrade(engine)
    info = seed(Store(engine), NOW)
    seed_health(engine, info)
    yield engine, info
    engine.dispose()


def expected_lag(snapshot, group):
    g = snapshot.groups[group]
    return {tp: snapshot.partitions[tp].log_end - c for tp, c in g.committed.items()}


@pytest.mark.parametrize(
    "n, points, expected",
    [
        (5, 10, [0, 1, 2, 3, 4]),  # fewer than asked: all
        (10, 3, [0, 4, 9]),  # first, middle, last
        (10, 1, [9]),  # one point: the newest
        (0, 5, []),
    ],
)
def test_thin_keeps_the_ends_and_spreads_evenly(n, points, expected):
    assert thin(list(range(n)), points) == expected


def test_group_names_include_every_group(seeded_engine):
    engine, info = seeded_engine
    assert read_group_names(engine, info.cluster) == sorted(["orders-app", "billing", "kip-app", HTML_GROUP])
    assert read_group_names(engine, "elsewhere") == []


def test_header_is_the_current_state_with_members(seeded_engine):
    engine, info = seeded_engine
    h = read_group_header(engine, info.cluster, "orders-app")
    assert (h.state, h.type, h.assignor, h.coordinator, h.members, h.current) == (
        GroupState.STABLE,
        GroupType.CLASSIC,
        "range",
        1,
        2,
        True,
    )
    kip = read_group_header(engine, info.cluster, "kip-app")
    assert (kip.state, kip.state_inferred) == (GroupState.RECONCILING, True)
    assert read_group_header(engine, info.cluster, "nope") is None


def test_members_carry_their_current_assignment(seeded_engine):
    engine, info = seeded_engine
    rows = read_members(engine, info.cluster, "orders-app")
    assert [(m.client_id, m.host, m.assignment) for m in rows] == [
        ("orders-1", "/10.0.0.1", (("orders", 0), ("orders", 1))),
        ("orders-2", "/10.0.0.2", (("orders", 2), ("orders", 3))),
    ]


def test_rebalance_counts_since(seeded_engine):
    engine, info = seeded_engine
    assert read_rebalance_counts(engine, info.cluster, info.first_at) == {"orders-app": 2, "kip-app": 1}
    # the leave happened at sample 120: only it is within the last 100 samples
    assert read_rebalance_counts(engine, info.cluster, info.last_at - 100 * STEP_MS) == {"orders-app": 1}


def test_lag_series_is_thinned_and_ends_with_lag_now(seeded_engine):
    engine, info = seeded_engine
    points = read_lag_series(engine, info.cluster, "orders-app", info.first_at, NOW + 1, points=10)
    times = sorted({p.at for p in points})
    assert len(times) == 10 and times[0] == info.first_at and times[-1] == info.last_at
    last = {(p.topic, p.partition): p.lag for p in points if p.at == info.last_at}
    assert last == expected_lag(info.final, "orders-app")
    assert len(read_thinned_sample_times(engine, info.cluster, info.first_at, points=0)) == SAMPLES


def test_total_lag_series_per_group(seeded_engine):
    engine, info = seeded_engine
    series = read_total_lag_series(engine, info.cluster, info.first_at, NOW + 1, points=5)
    assert set(series) == {"orders-app", "billing", "kip-app", HTML_GROUP}
    assert series["orders-app"][-1] == (info.last_at, sum(expected_lag(info.final, "orders-app").values()))
    assert [lag for _, lag in series["billing"]] == [0] * 5
    # the peak at sample 90 (minute 15) is 250 per partition
    peak = read_total_lag_series(engine, info.cluster, info.first_at + 90 * STEP_MS, info.first_at + 91 * STEP_MS)[
        "orders-app"
    ]
    assert peak == [(info.first_at + 90 * STEP_MS, 4 * 250)]


def test_assignment_history_shows_the_partition_that_moved(seeded_engine):
    engine, info = seeded_engine
    spans = read_assignment_history(engine, info.cluster, "orders-app", info.first_at, NOW + 1)
    p3 = [
        (s.client_id, s.valid_from - info.first_at, None if s.valid_to is None else s.valid_to - info.first_at)
        for s in spans
        if (s.topic, s.partition) == ("orders", 3)
    ]
    # orders-2 until the join (sample 60, members empty while rebalancing), orders-3 until the leave, orders-2 again
    assert p3 == [
        ("orders-2", 0, 60 * STEP_MS),
        ("orders-3", 61 * STEP_MS, 120 * STEP_MS),
        ("orders-2", 121 * STEP_MS, None),
    ]
    assert all(isinstance(s, AssignmentSpan) for s in spans)


def test_topic_partitions_with_produce_rate(seeded_engine):
    engine, info = seeded_engine
    rows = read_topic_partitions(engine, info.cluster, info.first_at)
    assert [(r.topic, r.partition) for r in rows] == sorted([*ORDERS, *PAYMENTS, *EVENTS_TP])
    orders0 = next(r for r in rows if (r.topic, r.partition) == ("orders", 0))
    assert orders0.log_end == info.final.partitions[ORDERS[0]].log_end
    assert orders0.rate_per_s == pytest.approx(200 / 10)  # +200 offsets every 10 s sample


def test_topic_consumers_with_their_lag(seeded_engine):
    engine, info = seeded_engine
    rows = read_topic_consumers(engine, info.cluster)
    assert rows == [
        TopicConsumer("events", HTML_GROUP, 1, 3),
        TopicConsumer("events", "kip-app", 1, 5),
        TopicConsumer("orders", "orders-app", 4, sum(expected_lag(info.final, "orders-app").values())),
        TopicConsumer("payments", "billing", 2, 0),
    ]


def test_database_size_and_tables(seeded_engine):
    engine, _ = seeded_engine
    assert read_database_size(engine) > 100_000
    assert {"samples", "rebalances", "alembic_version"} <= read_table_names(engine)


def test_health_now_is_the_newest_status_row(seeded_engine):
    engine, info = seeded_engine
    health = read_group_health_now(engine, info.cluster)
    assert {g: (h.status, h.worst) for g, h in health.items()} == {
        "orders-app": (Status.WARN, Status.STALL),
        "billing": (Status.OK, Status.OK),
    }
    assert health["orders-app"].since == info.first_at + 150 * STEP_MS
    assert read_partition_health_now(engine, info.cluster, "orders-app") == {
        ("orders", 0): Status.OK,
        ("orders", 1): Status.OK,
        ("orders", 2): Status.OK,
        ("orders", 3): Status.STALL,
    }
    assert read_partition_health_now(engine, info.cluster, "kip-app") == {}


# Log ends are stamped when they were read: the seed's sampling takes 40-46 ms after each sample's time,
# so an answer is that much less than the step arithmetic.
READ_S = 0.043


def about(seconds: float):
    return approx(seconds - READ_S, abs=0.0031)


def test_lag_seconds_interpolate_the_log_end_history(seeded_engine):
    engine, info = seeded_engine
    # events grows by 1 record per 10 s sample and kip-app commits 5 behind: the record after its
    # committed offset was appended 4 samples before the newest one, at the latest, and after the sample before
    [kip] = read_lag_seconds(engine, info.cluster, "kip-app").values()
    assert (kip.method, kip.seconds, kip.error) == ("interpolated", about(40.0), approx(10.0, abs=0.0061))
    # orders grows by 200 per sample and orders-app is 10 behind: the record after its committed offset is
    # the 191st of the last step's 200, appended 9.55 s into that 10 s step: 0.45 s before the newest sample.
    lags = read_lag_seconds(engine, info.cluster, "orders-app")
    assert lags.keys() == {("orders", p) for p in range(4)}
    assert all(v.seconds == about(0.45) for v in lags.values()), lags
    # a history shorter than the lag: only a bound, from the oldest point kept (2 samples back)
    [bound] = read_lag_seconds(engine, info.cluster, "kip-app", history_ms=2 * STEP_MS).values()
    assert bound.at_least and bound.seconds == about(2 * STEP_MS / 1000)
    assert read_lag_seconds(engine, info.cluster, "no-such-group") == {}


def test_max_lag_seconds_per_group_agree_with_the_group_page(seeded_engine):
    engine, info = seeded_engine
    worst = read_max_lag_seconds(engine, info.cluster)
    assert (worst["kip-app"].seconds, worst[HTML_GROUP].seconds) == (about(40.0), about(20.0))
    # the overview thins the history (a point every 2 minutes at most), and says so in its error
    page = read_lag_seconds(engine, info.cluster, "kip-app")[("events", 0)]
    assert worst["kip-app"].error >= page.error
    assert worst["billing"] == TimeLag(0.0)
    assert worst["orders-app"].seconds == about(0.45)


@pytest.mark.parametrize("tail", [2, 6])  # 2: kip-app's committed offset is behind the tail, 6: inside it
@pytest.mark.parametrize("history_ms", [2 * STEP_MS, 50 * STEP_MS, SAMPLES * STEP_MS])
def test_max_lag_seconds_shortcuts_give_the_per_partition_maximum(seeded_engine, history_ms, tail, monkeypatch):
    """Caught-up and older-than-history partitions skip the interpolation, recent ones use only the
    tail of the history: the answer must not change."""
    monkeypatch.setattr(lag_seconds, "_TAIL", tail)
    engine, info = seeded_engine
    expected = {}
    for group in info.final.groups:
        lags = [v for v in read_lag_seconds(engine, info.cluster, group, history_ms=history_ms).values() if v]
        if lags:
            expected[group] = max(lags, key=lambda v: (v.seconds, v.at_least))
    got = read_max_lag_seconds(engine, info.cluster, history_ms=history_ms, points=SAMPLES)
    assert got == expected
    assert any(v.at_least for v in got.values()) == (history_ms < 40_000)  # kip-app's 40 s need the history
