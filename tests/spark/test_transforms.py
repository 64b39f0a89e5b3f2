"""spark.transforms on small inline histories, against figures computed by hand."""

from __future__ import annotations

import functools
import itertools
import json
import random

import pytest
from pyspark.sql import DataFrame, Row
from pyspark.testing import assertDataFrameEqual

from spark.transforms import (
    bucket_spans,
    compute_exact_trends,
    compute_lag_partials,
    compute_lag_trends,
    compute_log_end_index,
    compute_partition_rows,
    compute_protocol_comparison,
    compute_rebalance_stats,
    compute_sample_totals,
    compute_stability_ranking,
    compute_trends_from_history,
    finish_trends,
    merge_lag_partials,
    select_new_with_previous,
    select_time_lag_buckets,
    select_time_lag_points,
)

T0 = 1_700_006_400_000  # a day boundary, so every window's bucket starts here
S = 1000
GO = "cluster string, group_id string, topic string, partition int, sample_id int, taken_at long, committed long"
PO = "cluster string, topic string, partition int, sample_id int, taken_at long, log_start long, log_end long"


def history(spark, series: dict[tuple[str, str, int], list[tuple[int, int | None, int]]]):
    """{(group, topic, partition): [(seconds after T0, committed, log_end), ...]} -> the two history frames.

    Samples are numbered by time, so equal times share a sample as in the store.
    """
    times = sorted({s for points in series.values() for s, _, _ in points})
    sample = {s: i + 1 for i, s in enumerate(times)}
    go = [("c", g, t, p, sample[s], T0 + s * S, c) for (g, t, p), pts in series.items() for s, c, _ in pts]
    ends = {(t, p, s): e for (g, t, p), pts in series.items() for s, _, e in pts}
    po = [("c", t, p, sample[s], T0 + s * S, 0, e) for (t, p, s), e in ends.items()]
    return spark.createDataFrame(go, GO), spark.createDataFrame(po, PO)


def time_lag_points(po, go, width: int = 10 * S, index=None):
    """The points a run over the group offsets `go` reads, through the log-end index (its own, by default)."""
    index = compute_log_end_index(po, width) if index is None else index
    return select_time_lag_points(po, select_time_lag_buckets(index, go, width), width)


LAGGING = {("g", "t", 0): [(0, 900, 1000), (10, 950, 1200), (20, 1000, 1400), (30, 1050, 1600)]}


def test_lag_and_time_lag_per_sample_follow_the_log_end_history(spark):
    go, po = history(spark, LAGGING)
    rows = compute_partition_rows(go, po)
    # The record at C was appended when the log end reached C + 1 (monitor/lag.py).
    # t=0: 900 is older than the only point, of age 0 s: a bound of 0 says nothing -> None.
    # t=10: 950 < oldest log end 1000 -> a bound: 10 s since that point.
    # t=20: 1001 lies between (0 s, 1000) and (10 s, 1200) -> reached at 0.05 s -> 19.95 s.
    # t=30: 1051 lies between the same points -> reached at 2.55 s -> 27.45 s.
    expected = [
        Row(taken_at=T0, lag=100, lag_seconds=None, lag_seconds_bounded=False),
        Row(taken_at=T0 + 10 * S, lag=250, lag_seconds=10.0, lag_seconds_bounded=True),
        Row(taken_at=T0 + 20 * S, lag=400, lag_seconds=19.95, lag_seconds_bounded=False),
        Row(taken_at=T0 + 30 * S, lag=550, lag_seconds=27.45, lag_seconds_bounded=False),
    ]
    assertDataFrameEqual(rows.select("taken_at", "lag", "lag_seconds", "lag_seconds_bounded"), expected)


def test_a_run_over_new_samples_keeps_only_the_rows_deltas_and_time_lag_can_reach(spark):
    series = {
        ("g", "t", 0): [(0, 0, 100), (10, 50, 200), (20, 120, 300), (30, 250, 400), (40, 330, 500), (50, 420, 600)]
    }
    go, po = history(spark, series)
    new = select_new_with_previous(go, 4)  # samples 5 and 6 are new; sample 4 is the previous one
    assert sorted(r.taken_at for r in new.collect()) == [T0 + s * S for s in (30, 40, 50)]
    kept = time_lag_points(po, new)
    # lowest commit 250: points from the first one above it (t=20) on, and the one before (t=10, carrying
    # the highest log end up to it); t=0 is out
    assert sorted(r.taken_at for r in kept.collect()) == [T0 + s * S for s in (10, 20, 30, 40, 50)]
    # t=40: 331 between (20 s, 300) and (30 s, 400) -> reached at 23.1 s -> 16.9 s; t=50: 421 -> 32.1 s -> 17.9 s
    cols = ("taken_at", "lag_seconds", "lag_seconds_bounded", "d_committed")
    expected = [
        Row(taken_at=T0 + 40 * S, lag_seconds=16.9, lag_seconds_bounded=False, d_committed=80),
        Row(taken_at=T0 + 50 * S, lag_seconds=17.9, lag_seconds_bounded=False, d_committed=90),
    ]
    newer = f"taken_at >= {T0 + 40 * S}"
    assertDataFrameEqual(compute_partition_rows(new, kept).where(newer).select(*cols), expected)
    assertDataFrameEqual(compute_partition_rows(go, po).where(newer).select(*cols), expected)


def test_a_consumer_hours_behind_keeps_the_points_around_its_commits_and_the_highest_log_end_in_between(spark):
    ends = [100, 200, 300, 400, 500, 600, 700, 150, 250, 350, 450]  # the leader restarted at t=70
    commits = {80: 200, 90: 220, 100: 460}
    series = {("g", "t", 0): [(10 * k, commits.get(10 * k, 0), end) for k, end in enumerate(ends)]}
    go, po = history(spark, series)
    new = select_new_with_previous(go, 9)  # samples 10 and 11 (t=90, 100) are new; t=80 is the previous one
    kept = time_lag_points(po, new)
    # commits 200..460: the points from the first above 200 (t=20) to the first above 460 (t=40), the one
    # before (t=10); t=50..70 as t=70 carrying their highest log end (700); the queries' own samples
    assert sorted((r.taken_at, r.log_end) for r in kept.collect()) == [
        (T0 + s * S, end)
        for s, end in ((10, 200), (20, 300), (30, 400), (40, 500), (70, 700), (80, 250), (90, 350), (100, 450))
    ]
    # t=100: 460 is past the log end (450) but not the highest (700): 461 between (30 s, 400) and (40 s, 500)
    cols = ("taken_at", "lag", "lag_seconds", "lag_seconds_bounded", "d_log_end", "d_committed")
    newer = f"taken_at >= {T0 + 90 * S}"
    full = compute_partition_rows(go, po).where(newer).select(*cols)
    assert full.where(f"taken_at = {T0 + 100 * S}").first().lag_seconds == pytest.approx(63.9)
    assertDataFrameEqual(compute_partition_rows(new, kept).where(newer).select(*cols), full)


def test_the_log_end_index_gives_the_whole_historys_time_lag_from_a_few_buckets(spark):
    """Random series: five-point buckets, the index written by two runs (one ending mid-bucket), any watermark."""
    rng = random.Random(5)
    series = {}
    for p in range(6):
        end, committed, points = 1000, 900, []
        for k in range(120):
            end += rng.choice((0, 3, 40, 200)) if k != 70 or p % 2 else -500  # a leader with a lower log end
            committed = min(end, committed + rng.choice((0, 0, 5, 60, 150))) if k != 90 or p != 3 else 100
            points.append((10 * k, committed if k % 17 else None, end))
        series[("g", "t", p)] = points
    go, po = history(spark, series)
    width = 50 * S
    for watermark in (30, 95, 118):
        new = select_new_with_previous(go, watermark)
        index = compute_log_end_index(po.where("sample_id <= 77"), width).unionByName(
            compute_log_end_index(po.where("sample_id > 77"), width)
        )
        kept = time_lag_points(po, new, width, index)
        assert kept.count() < po.count() / 2 or watermark < 50
        cols = ("topic", "partition", "taken_at", "lag", "lag_seconds", "lag_seconds_bounded", "d_log_end")
        newer = f"sample_id > {watermark}"
        expected = compute_partition_rows(go, po).where(newer).select(*cols)
        assertDataFrameEqual(compute_partition_rows(new, kept).where(newer).select(*cols), expected)


def test_bucket_spans_join_neighbours_and_stay_few():
    assert bucket_spans([], 10) == []
    assert bucket_spans([30, 0, 10, 50, 10], 10) == [(0, 19), (30, 39), (50, 59)]
    assert bucket_spans([0, 100, 130, 500], 10, most=2) == [(0, 139), (500, 509)]  # the nearest two joined


def test_a_restarted_brokers_lower_log_end_does_not_cover_an_older_committed_offset(spark):
    series = {("g", "t", 0): [(0, 150, 200), (10, 150, 100), (20, 150, 300)]}  # the leader restarted at t=10
    go, po = history(spark, series)
    newest = go.where(f"taken_at = {T0 + 20 * S}")
    # over the running maximum (200, 200, 300), 150 is older than these points: a bound, 20 s, whatever t=10 says
    for points in (po, time_lag_points(po, newest)):  # the whole history, and what the log-end index keeps
        answer = compute_partition_rows(newest, points).select("lag_seconds", "lag_seconds_bounded")
        assert [tuple(r) for r in answer.collect()] == [(20.0, True)]


def test_time_lag_edge_cases_are_never_negative_or_infinite(spark):
    series = {
        # caught up: 0 s even though the log end never moved (a flat table gave infinity, #121)
        ("idle", "flat", 0): [(0, 50, 50), (10, 50, 50), (20, 50, 50)],
        # flat log end with lag: no point at or below 40 -> a bound: None at t=0 (0 s says nothing), then 10, 20 s
        ("stuck", "flat2", 0): [(0, 40, 50), (10, 40, 50), (20, 40, 50)],
        # committed ahead of the log end sampled just after (skew): lag clamps to 0, so 0 s
        ("skew", "s", 0): [(0, 105, 100), (10, 110, 110)],
        # nothing committed: lag and time lag unknown
        ("none", "n", 0): [(0, None, 10), (10, None, 20)],
        # equal log ends around the committed offset: the first time it passed 100 was t=20
        ("step", "st", 0): [(0, 90, 100), (10, 100, 100), (20, 100, 130), (30, 100, 160)],
    }
    go, po = history(spark, series)
    rows = compute_partition_rows(go, po)
    expected = [
        Row(group_id="idle", s=0, lag=0, lag_seconds=0.0),
        Row(group_id="idle", s=10, lag=0, lag_seconds=0.0),
        Row(group_id="idle", s=20, lag=0, lag_seconds=0.0),
        Row(group_id="stuck", s=0, lag=10, lag_seconds=None),
        Row(group_id="stuck", s=10, lag=10, lag_seconds=10.0),
        Row(group_id="stuck", s=20, lag=10, lag_seconds=20.0),
        Row(group_id="skew", s=0, lag=0, lag_seconds=0.0),
        Row(group_id="skew", s=10, lag=0, lag_seconds=0.0),
        Row(group_id="none", s=0, lag=None, lag_seconds=None),
        Row(group_id="none", s=10, lag=None, lag_seconds=None),
        # t=0: 90 < 100 (the only point, of age 0 s) -> None; t=10: caught up; t=20: log end was 100 from t=0
        # to t=10, so 101 lies between (10 s, 100) and (20 s, 130) -> reached at 10 1/3 s -> 9 2/3 s;
        # t=30: same point -> 19 2/3 s.
        Row(group_id="step", s=0, lag=10, lag_seconds=None),
        Row(group_id="step", s=10, lag=0, lag_seconds=0.0),
        Row(group_id="step", s=20, lag=30, lag_seconds=29 / 3),
        Row(group_id="step", s=30, lag=60, lag_seconds=59 / 3),
    ]
    from pyspark.sql import functions as F

    actual = rows.select("group_id", ((F.col("taken_at") - T0) / S).cast("int").alias("s"), "lag", "lag_seconds")
    assertDataFrameEqual(actual, expected)


def test_offset_deltas_never_go_negative(spark):
    series = {("g", "t", 0): [(0, 10, 100), (10, 30, 150), (20, 5, 40)]}  # topic recreated, consumer reset
    go, po = history(spark, series)
    rows = compute_partition_rows(go, po)
    expected = [
        Row(d_log_end=None, d_committed=None, dt_ms=None),
        Row(d_log_end=50, d_committed=20, dt_ms=10_000),
        Row(d_log_end=0, d_committed=0, dt_ms=10_000),
    ]
    assertDataFrameEqual(
        rows.orderBy("taken_at").select("d_log_end", "d_committed", "dt_ms"), expected, checkRowOrder=True
    )


def test_groups_sharing_a_partition_keep_their_own_deltas_and_a_missing_log_end_gives_no_lag(spark):
    series = {("a", "shared", 0): [(0, 10, 100), (10, 30, 150)], ("b", "shared", 0): [(0, 90, 100), (10, 95, 150)]}
    go, po = history(spark, series)
    po = po.union(spark.createDataFrame([("c", "other", 0, 1, T0, 0, 5)], PO))  # a partition nobody reads
    go = go.union(spark.createDataFrame([("c", "a", "gone", 0, 2, T0 + 10 * S, 3)], GO))  # no log end fetched
    rows = compute_partition_rows(go, po)
    expected = [
        Row(group_id="a", topic="shared", s=0, lag=90, d_log_end=None, d_committed=None),
        Row(group_id="a", topic="shared", s=10, lag=120, d_log_end=50, d_committed=20),
        Row(group_id="b", topic="shared", s=0, lag=10, d_log_end=None, d_committed=None),
        Row(group_id="b", topic="shared", s=10, lag=55, d_log_end=50, d_committed=5),
        Row(group_id="a", topic="gone", s=10, lag=None, d_log_end=None, d_committed=None),
    ]
    from pyspark.sql import functions as F

    assertDataFrameEqual(
        rows.select(
            "group_id",
            "topic",
            ((F.col("taken_at") - T0) / S).cast("int").alias("s"),
            "lag",
            "d_log_end",
            "d_committed",
        ),
        expected,
    )


TREND_COLUMNS = [
    "group_id",
    "topic",
    "window",
    "bucket_start",
    "samples",
    "lag_avg",
    "lag_max",
    "lag_p95",
    "lag_last",
    "lag_slope_per_min",
    "produce_rate",
    "consume_rate",
    "catch_up_eta_s",
    "catching_up",
]


def test_trends_give_rates_slope_percentiles_and_eta(spark):
    series = {
        **LAGGING,  # produce 20/s, consume 5/s: falling behind by 900 offsets a minute
        # catching up: produce 1/s, consume 5/s, lag 100 -> 60 -> 20: ETA 20 / 4 = 5 s
        ("fast", "u", 0): [(0, 0, 100), (10, 50, 110), (20, 100, 120)],
        # no lag at the end: ETA 0 whatever the rates
        ("done", "v", 0): [(0, 0, 10), (10, 10, 10)],
    }
    go, po = history(spark, series)
    trends = compute_trends_from_history(go, po, {"1m": 60_000}).where("topic != ''")
    expected = [
        # avg (100+250+400+550)/4; p95 at rank 0.95*3 = 2.85 -> 400 + 0.85*150; 150 per 10 s = 900/min
        Row("g", "t", "1m", T0, 4, 325.0, 550, 527.5, 550, 900.0, 20.0, 5.0, None, False),
        Row("fast", "u", "1m", T0, 3, 60.0, 100, 96.0, 20, -240.0, 1.0, 5.0, 5.0, True),
        Row("done", "v", "1m", T0, 2, 5.0, 10, 9.5, 0, -60.0, 0.0, 1.0, 0.0, True),
    ]
    assertDataFrameEqual(
        trends.select(*TREND_COLUMNS), spark.createDataFrame(expected, trends.select(*TREND_COLUMNS).schema)
    )


def test_group_rows_sum_topics_and_buckets_split_by_window(spark):
    series = {
        ("g", "a", 0): [(50, 0, 100), (70, 10, 200)],  # samples at 0:50 and 1:10: two 1-minute buckets
        ("g", "a", 1): [(50, 0, 10), (70, 5, 20)],
        ("g", "b", 0): [(50, 0, 1), (70, 1, 1)],
    }
    go, po = history(spark, series)
    trends = compute_trends_from_history(go, po, {"1m": 60_000, "1h": 3_600_000}).where("group_id = 'g'")
    cols = ["topic", "window", "bucket_start", "samples", "lag_avg", "lag_last", "produce_rate", "consume_rate"]
    expected = [
        Row("a", "1m", T0, 1, 110.0, 110, None, None),
        Row("a", "1m", T0 + 60 * S, 1, 205.0, 205, 5.5, 0.75),  # (100+10)/20 s, (10+5)/20 s
        Row("a", "1h", T0, 2, 157.5, 205, 5.5, 0.75),
        Row("b", "1m", T0, 1, 1.0, 1, None, None),
        Row("b", "1m", T0 + 60 * S, 1, 0.0, 0, 0.0, 0.05),
        Row("b", "1h", T0, 2, 0.5, 0, 0.0, 0.05),
        Row("", "1m", T0, 1, 111.0, 111, None, None),
        Row("", "1m", T0 + 60 * S, 1, 205.0, 205, 5.5, 0.8),
        Row("", "1h", T0, 2, 158.0, 205, 5.5, 0.8),
    ]
    actual = trends.select(*cols)
    assertDataFrameEqual(actual, spark.createDataFrame(expected, actual.schema))
    # an incremental run asks for the buckets new samples touched only: here the second minute
    totals = compute_sample_totals(compute_partition_rows(go, po)).where("group_id = 'g'")
    touched = compute_lag_trends(totals, {"1m": 60_000, "1h": 3_600_000}, {"1m": (T0 + 60 * S, T0 + 60 * S)})
    assertDataFrameEqual(
        touched.select(*cols),
        spark.createDataFrame([r for r in expected if r[1] == "1m" and r[2] == T0 + 60 * S], actual.schema),
    )


RB = (
    "cluster string, group_id string, started_at long, ended_at long, protocol string, trigger string, "
    "members_before int, members_after int, members_joined string, members_left string, partitions_moved int"
)


def ref(member: str, client: str, host: str) -> dict:
    return {"member_id": member, "client_id": client, "host": host, "instance_id": None}


def rebalances(spark):
    a, b, c = ref("m-a", "app-a", "/10.0.0.1"), ref("m-b", "app-b", "/10.0.0.2"), ref("m-c", "app-c", "/10.0.0.1")
    rows = [
        # group g: three in the first hour (one still running), one in the second
        ("c", "g", T0 + 60 * S, T0 + 64 * S, "eager", "member_joined", 1, 2, [a], [], 3),
        ("c", "g", T0 + 600 * S, T0 + 610 * S, "eager", "member_left", 2, 1, [], [a], 3),
        ("c", "g", T0 + 1200 * S, None, "eager", "member_joined", 1, 2, [b], [], 0),
        ("c", "g", T0 + 3700 * S, T0 + 3702 * S, "eager", "member_joined", 2, 3, [a, c], [], 4),
        # group h: one cooperative rebalance
        ("c", "h", T0 + 100 * S, T0 + 101 * S, "cooperative", "member_left", 2, 1, [], [b], 1),
    ]
    return spark.createDataFrame([(*r[:8], json.dumps(r[8]), json.dumps(r[9]), r[10]) for r in rows], RB)


def test_rebalance_stats_count_durations_members_and_culprits(spark):
    stats = compute_rebalance_stats(rebalances(spark))
    cols = [
        "group_id",
        "window",
        "bucket_start",
        "protocol",
        "rebalances",
        "completed",
        "total_duration_ms",
        "mean_duration_ms",
        "p95_duration_ms",
        "partitions_moved",
        "members_joined",
        "members_left",
    ]
    H = 3_600_000
    expected = [
        # durations 4 s and 10 s (the third is in progress): p95 = 4 + 0.95 * 6
        Row("g", "1h", T0, "eager", 3, 2, 14_000, 7_000.0, 9_700.0, 6, 2, 1),
        Row("g", "1h", T0 + H, "eager", 1, 1, 2_000, 2_000.0, 2_000.0, 4, 2, 0),
        Row("g", "1d", T0, "eager", 4, 3, 16_000, 16_000 / 3, 9_400.0, 10, 4, 1),  # 2,4,10: 4 + 0.9*6
        Row("h", "1h", T0, "cooperative", 1, 1, 1_000, 1_000.0, 1_000.0, 1, 0, 1),
        Row("h", "1d", T0, "cooperative", 1, 1, 1_000, 1_000.0, 1_000.0, 1, 0, 1),
    ]
    actual = stats.select(*cols)
    assertDataFrameEqual(actual, spark.createDataFrame(expected, actual.schema))
    day = stats.where("group_id = 'g' AND window = '1d'").first()
    # app-a joined, left, joined again: 3 rebalances; host 10.0.0.1 (a and c) also 3; then b, c with 1
    assert json.loads(day.top_clients) == [
        {"name": "app-a", "rebalances": 3},
        {"name": "app-b", "rebalances": 1},
        {"name": "app-c", "rebalances": 1},
    ]
    assert json.loads(day.top_hosts) == [{"name": "/10.0.0.1", "rebalances": 3}, {"name": "/10.0.0.2", "rebalances": 1}]
    assert json.loads(day.triggers) == {"member_joined": 3, "member_left": 1}


def test_ranking_puts_the_least_stable_group_first_and_compares_protocols(spark):
    rb = rebalances(spark)
    ranking = compute_stability_ranking(rb, T0, T0 + 86_400_000)
    assertDataFrameEqual(
        ranking.select("group_id", "rank", "rebalances", "total_duration_ms", "protocol"),
        [
            Row(group_id="g", rank=1, rebalances=4, total_duration_ms=16_000, protocol="eager"),
            Row(group_id="h", rank=2, rebalances=1, total_duration_ms=1_000, protocol="cooperative"),
        ],
    )
    assert ranking.where("group_id = 'g'").first().per_hour == pytest.approx(4 / 24)
    protocols = compute_protocol_comparison(rb, T0, T0 + 86_400_000)
    assertDataFrameEqual(
        protocols.select("protocol", "groups", "rebalances", "mean_duration_ms", "per_group"),
        [
            Row(protocol="eager", groups=1, rebalances=4, mean_duration_ms=16_000 / 3, per_group=4.0),
            Row(protocol="cooperative", groups=1, rebalances=1, mean_duration_ms=1000.0, per_group=1.0),
        ],
    )


TOTALS = (
    "cluster string, group_id string, topic string, taken_at long, lag long, lag_seconds double, bounded int, "
    "d_log_end long, d_committed long, dt_log_end long, dt_committed long"
)


def day_of_totals(seed: int) -> list[tuple]:
    """A day of per-sample totals every 30 s (2,880 a series, more than a sketch keeps exactly): a lag that
    wanders with long runs of equal values, lag in seconds to the ms, and gaps where either is unknown."""
    rng = random.Random(seed)
    rows = []
    for group, topic in (("g", "t"), ("g", ""), ("h", "u")):
        lag = 500
        for k in range(2880):
            lag = max(0, lag + rng.choice((0, 0, 0, 5, -5, rng.randint(-400, 400))))
            seconds = round(rng.expovariate(1 / 30), 3) if rng.random() > 0.05 else None
            lag_known = lag if rng.random() > 0.02 else None
            flow = (rng.randint(0, 900), rng.randint(0, 900), 30 * S, 30 * S)
            rows.append(("c", group, topic, T0 + k * 30 * S, lag_known, seconds, int(rng.random() < 0.1), *flow))
    return rows


def rank_error(values: list, q: float, estimate: float) -> float:
    """How far, in rank (0..1), `estimate` is from being a q-quantile of `values` (0: it is one)."""
    below = sum(v < estimate for v in values) / len(values)
    at_most = sum(v <= estimate for v in values) / len(values)
    return max(0.0, below - q, q - at_most)


def test_hour_and_day_buckets_merged_from_partials_equal_the_exact_ones_but_for_percentiles_within_1pct_rank(spark):
    rows = day_of_totals(7)
    totals = spark.createDataFrame(rows, TOTALS)
    wide = {"1h": 3_600_000, "1d": 86_400_000}
    exact = {
        (r.group_id, r.topic, r.window, r.bucket_start): r
        for r in finish_trends(compute_exact_trends(totals, wide)).collect()
    }
    # as runs store them: each run the partials of its own new samples, here 20 runs of uneven length
    cuts = [T0, *sorted(random.Random(1).sample(range(T0, T0 + 86_400_000, 30 * S), 19)), T0 + 86_400_000]
    runs = [totals.where(f"taken_at >= {a} and taken_at < {b}") for a, b in itertools.pairwise(cuts)]
    partials = functools.reduce(DataFrame.unionByName, [compute_lag_partials(run) for run in runs])
    merged = {
        (r.group_id, r.topic, r.window, r.bucket_start): r
        for r in finish_trends(merge_lag_partials(partials, wide)).collect()
    }
    assert merged.keys() == exact.keys() and len(merged) == 3 * 25
    approximate = ("lag_p95", "lag_seconds_p50", "lag_seconds_p95")
    for key, row in merged.items():
        assert {k: v for k, v in row.asDict().items() if k not in approximate} == {
            k: v for k, v in exact[key].asDict().items() if k not in approximate
        }, key
        group, topic, window, start = key
        inside = [r for r in rows if (r[1], r[2]) == (group, topic) and 0 <= r[3] - start < wide[window]]
        lags, seconds = [r[4] for r in inside if r[4] is not None], [r[5] for r in inside if r[5] is not None]
        for values, q, estimate in (
            (lags, 0.95, row.lag_p95),
            (seconds, 0.5, row.lag_seconds_p50),
            (seconds, 0.95, row.lag_seconds_p95),
        ):
            assert rank_error(values, q, estimate) <= 0.01, (key, q)
