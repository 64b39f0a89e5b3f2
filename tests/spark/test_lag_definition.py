"""Spark's lag and lag in seconds answer tests/support/lag_cases.py like monitor.lag does (tests/unit/test_lag.py).

Each case is its own topic-partition: its history points are log-end samples, and the
committed offset is one group sample at `now`, sharing the point's sample when one is at now.
"""

from __future__ import annotations

import pytest
from lag_cases import LAG_CASES, TIME_LAG_CASES

from spark.transforms import (
    compute_log_end_index,
    compute_partition_rows,
    select_time_lag_buckets,
    select_time_lag_points,
)

GO = "cluster string, group_id string, topic string, partition int, sample_id int, taken_at long, committed long"
PO = "cluster string, topic string, partition int, sample_id int, taken_at long, log_start long, log_end long"

NOT_IN_SPARK = {
    # A Spark query is a group sample: its history is the log-end points sampled up to its own time,
    # so a point stamped after it belongs to a later sample and is not in its history. The pure function
    # takes the history its caller gives it, which may hold such a point when clocks disagree.
    "newest point stamped after now (#138)",
}
SPARK_TIME_LAG_CASES = [c for c in TIME_LAG_CASES if c.name not in NOT_IN_SPARK]


def test_every_excluded_case_exists():
    assert {c.name for c in TIME_LAG_CASES} >= NOT_IN_SPARK


def time_lag_frames(spark, cases):
    points, queries = [], []
    for n, case in enumerate(cases):
        points += [("c", case.name, 0, n * 100 + i, at, 0, end) for i, (end, at) in enumerate(case.history)]
        sample = {at: n * 100 + i for i, (_, at) in reversed(list(enumerate(case.history)))}  # first per time
        queries.append(("c", "g", case.name, 0, sample.get(case.now, n * 100 + 99), case.now, case.committed))
    return spark.createDataFrame(queries, GO), spark.createDataFrame(points, PO)


def answers(rows) -> dict[str, tuple[float | None, bool]]:
    return {
        r.topic: (None if r.lag_seconds is None else round(r.lag_seconds, 3), r.lag_seconds_bounded)
        for r in rows.select("topic", "lag_seconds", "lag_seconds_bounded").collect()
    }


@pytest.fixture(scope="module")
def time_lag_frames_of_all_cases(spark):
    return time_lag_frames(spark, SPARK_TIME_LAG_CASES)


def expected_answers() -> dict[str, tuple[float | None, bool]]:
    return {c.name: (c.seconds, c.at_least) for c in SPARK_TIME_LAG_CASES}


def test_lag_seconds_answer_the_shared_cases(time_lag_frames_of_all_cases):
    go, po = time_lag_frames_of_all_cases
    assert answers(compute_partition_rows(go, po)) == expected_answers()


@pytest.mark.parametrize("width", [1, 7, 1_000_000])  # a point per bucket, a few, all in one
def test_the_points_kept_for_a_run_over_new_samples_answer_the_same(time_lag_frames_of_all_cases, width):
    go, po = time_lag_frames_of_all_cases
    buckets = select_time_lag_buckets(compute_log_end_index(po, width), go, width)
    assert answers(compute_partition_rows(go, select_time_lag_points(po, buckets, width))) == expected_answers()


def test_lag_answers_the_shared_cases(spark):
    queries = [("c", "g", case.name, 0, n, 0, case.committed) for n, case in enumerate(LAG_CASES)]
    points = [
        ("c", case.name, 0, n, 0, 0, case.log_end) for n, case in enumerate(LAG_CASES) if case.log_end is not None
    ]
    rows = compute_partition_rows(spark.createDataFrame(queries, GO), spark.createDataFrame(points, PO))
    assert {r.topic: r.lag for r in rows.select("topic", "lag").collect()} == {c.name: c.lag for c in LAG_CASES}
