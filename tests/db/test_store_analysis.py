"""monitor.store.analysis readers against real SQLite, on rows written by spark/load.py's writer."""

from __future__ import annotations

from dashboard_seed import trend_row

from monitor.store.analysis import read_last_analysis, read_latest_trends
from spark.load import Results, RunRecord, write_failed_run, write_results

HOUR = 3_600_000


def run(engine, trends: list[dict]) -> int:
    first = min(r["bucket_start"] for r in trends)
    last = max(r["bucket_start"] for r in trends)
    return write_results(
        engine, RunRecord(1, 10, 10, first, last, "local[1]"), Results(trends, [], [], [], {"1h": (first, last)}, {})
    )


def test_latest_trends_are_the_newest_bucket_of_each_group_for_one_topic_and_window(sqlite_engine):
    def row(group, at, produce, **kw):
        return trend_row("c", group, at, produce=produce, consume=1.0, lag_last=5, **kw)

    run(
        sqlite_engine,
        [
            row("a", 0, 1.0),
            row("a", HOUR, 2.0),
            row("a", HOUR, 9.0, topic="t"),
            row("b", 0, 3.0),
            trend_row("other", "a", 2 * HOUR, produce=7.0, consume=1.0, lag_last=5),
        ],
    )
    latest = read_latest_trends(sqlite_engine, "c", "1h")
    assert [(r.group_id, r.bucket_start, r.produce_rate) for r in latest] == [("a", HOUR, 2.0), ("b", 0, 3.0)]
    assert [(r.group_id, r.topic, r.produce_rate) for r in read_latest_trends(sqlite_engine, "c", "1h", "t")] == [
        ("a", "t", 9.0)
    ]
    assert read_latest_trends(sqlite_engine, "c", "1d") == []


def test_last_analysis_is_none_before_the_first_run_then_the_newest_whatever_its_status(sqlite_engine):
    assert read_last_analysis(sqlite_engine) is None
    run(sqlite_engine, [trend_row("c", "a", 0, produce=1.0, consume=1.0, lag_last=0)])
    write_failed_run(sqlite_engine, RunRecord(2, 10, 0, None, None, "local[1]"), 10, "boom")
    last = read_last_analysis(sqlite_engine)
    assert (last.status, last.error, last.rows_written) == ("failed", "boom", 0)
    assert read_last_analysis(sqlite_engine, "ok").rows_written == 1
