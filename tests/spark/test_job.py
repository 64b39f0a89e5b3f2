"""The analysis job against a real SQLite store written by monitor's own Store: incremental, exactly once."""

from __future__ import annotations

import re
import shutil

import pytest

from monitor.models import ClusterSnapshot, GroupSnapshot, GroupState, MemberRef, PartitionOffsets, Rebalance, Trigger
from monitor.models import TopicPartition as TP
from monitor.store import (
    Store,
    make_engine,
    read_analysis_watermark,
    read_last_analysis,
    read_rebalance_stats,
    read_trends,
    upgrade,
)
from spark import load
from spark.main import analyze_once

T0 = 1_700_006_400_000  # a day boundary
PRODUCE, CONSUME = 100, 40  # records/s per partition


def snapshot(k: int) -> ClusterSnapshot:
    """Sample k (every 10 s): two partitions, each produced at 100/s and consumed at 40/s."""
    t = k * 10
    parts = {TP("orders", p): PartitionOffsets(0, 1000 + PRODUCE * t) for p in (0, 1)}
    group = GroupSnapshot("billing", GroupState.STABLE, committed=dict.fromkeys(parts, 1000 + CONSUME * t))
    return ClusterSnapshot("c1", T0 + t * 1000, {"billing": group}, parts)


@pytest.fixture
def job(tmp_path, spark):
    url = f"sqlite:///{tmp_path / 'lagmon.db'}"
    upgrade(url)
    engine = make_engine(url)
    store = Store(engine)

    def write(first: int, last: int) -> None:
        for k in range(first, last):
            store.write_snapshot(snapshot(k))

    def analyze(report=lambda m: None, **kw):
        return analyze_once(spark, engine, url, str(tmp_path / "history"), report=report, **kw)

    job = type("Job", (), {})()
    job.engine, job.store, job.write, job.analyze, job.db = engine, store, write, analyze, tmp_path / "lagmon.db"
    yield job
    engine.dispose()


SKETCHED = ("lag_p95", "lag_seconds_p50", "lag_seconds_p95")


def exact_columns(rows) -> list[dict]:
    """Trend rows as an incremental run and a recompute agree on them: all but the 1h and 1d percentiles,
    merged from sketches by the one, exact in the other (test_transforms holds them within 1 % of rank)."""
    return [
        {k: v for k, v in {**r.__dict__, "run_id": 0}.items() if r.window in ("1m", "5m") or k not in SKETCHED}
        for r in rows
    ]


def hour_row(engine):
    [row] = read_trends(engine, "c1", "billing", "1h", "")
    return row


def test_runs_are_incremental_and_never_count_a_sample_twice(job, spark, tmp_path):
    job.write(0, 30)  # 0:00:00 .. 0:04:50
    job.store.write_rebalances(
        "c1",
        [
            Rebalance(
                "billing",
                T0 + 5_000,
                T0 + 9_000,
                "eager",
                Trigger.MEMBER_JOINED,
                1,
                2,
                (MemberRef("m-2", "app-2", "/10.0.0.2"),),
                (),
                2,
            )
        ],
    )
    first = job.analyze()
    assert (first.watermark, first.rows_read) == (30, 30 * 4)  # 2 offset + 2 log-end rows a sample
    row = hour_row(job.engine)
    assert (row.samples, row.produce_rate, row.consume_rate) == (30, 2 * PRODUCE, 2 * CONSUME)
    # lag grows by 2 x 60 records/s: 7,200 a minute; the lag seconds of the last sample: the record at the
    # committed offset (1000 + 40 t) was appended as the log end reached 1000 + 40 t + 1, when
    # 100 t' = 40 t + 1 -> t' = 0.4 t + 0.01 -> 0.6 x 290 s - 0.01 s = 173.99 s ago
    assert row.lag_slope_per_min == pytest.approx(7200)
    assert (row.catching_up, row.catch_up_eta_s) == (False, None)
    assert row.lag_seconds_max == pytest.approx(173.99)

    job.write(30, 60)  # five more minutes
    second = job.analyze()
    assert (second.watermark, second.rows_read) == (60, 30 * 4)  # only the new rows
    row = hour_row(job.engine)
    assert (row.samples, row.produce_rate, row.consume_rate) == (60, 2 * PRODUCE, 2 * CONSUME)
    five_minute = read_trends(job.engine, "c1", "billing", "5m", "")
    assert [(r.bucket_start - T0, r.samples) for r in five_minute] == [(0, 30), (300_000, 30)]
    [stats] = read_rebalance_stats(job.engine, "c1", "billing", "1h")
    assert (stats.rebalances, stats.total_duration_ms, stats.top_clients) == (
        1,
        4000,
        [{"name": "app-2", "rebalances": 1}],
    )
    history = spark.read.parquet(str(tmp_path / "history" / "group_offsets")).count()
    assert history == 60 * 2

    idle = job.analyze()  # nothing new: nothing read, results untouched
    assert (idle.rows_read, idle.rows_written) == (0, 0)
    assert hour_row(job.engine).samples == 60

    before = read_trends(job.engine)  # recomputing a range from the history writes the same rows again, exact
    again = job.analyze(since=T0, until=T0 + 590_000)
    assert (
        again.rows_read == 0 and again.rows_written == len(before) + 4
    )  # + 1h and 1d rebalance stats, ranking, protocols
    assert exact_columns(read_trends(job.engine)) == exact_columns(before)

    shutil.rmtree(tmp_path / "history")  # a new LAGMON_HISTORY_DIR: rebuilt from the store, same results
    rebuilt = job.analyze()
    assert rebuilt.rows_read == 60 * 4
    strip = lambda rows: [{**r.__dict__, "run_id": 0} for r in rows]  # noqa: E731
    assert strip(read_trends(job.engine)) == strip(before)


def test_a_batch_joined_by_the_store_equals_one_joined_in_spark(job, spark):
    """A few rows are joined in the store's own read (no broadcast jobs); many, in Spark: the same rows."""
    from spark import extract

    job.write(0, 12)
    jdbc = extract.build_jdbc(f"sqlite:///{job.db}")
    for dataset in extract.HISTORY_SCHEMAS:
        by_store, by_spark = (
            sorted(extract.extract_batch(spark, jdbc, dataset, 2, 9, rows).collect())
            for rows in (0, extract.STORE_JOINS_UP_TO + 1)
        )
        assert len(by_store) == 7 * 2 and by_store == by_spark, dataset
        assert by_store[0].asDict().keys() == set(extract.HISTORY_SCHEMAS[dataset].replace(",", " ").split()[::2])


def test_results_do_not_depend_on_how_the_steps_are_partitioned(job, spark, tmp_path, monkeypatch):
    """A small store's steps run in one partition without adaptive execution or generated code; a large store's in
    many, with both."""
    from spark import sizing

    job.write(0, 120)
    job.store.write_rebalances(
        "c1",
        [
            Rebalance(
                "billing",
                T0 + k * 60_000,
                T0 + k * 60_000 + 3_000 * k,
                "eager",
                Trigger.MEMBER_JOINED,
                1,
                2,
                (MemberRef(f"m-{k}", f"app-{k % 2}", "/10.0.0.2"),),
                (),
                k,
            )
            for k in range(1, 6)
        ],
    )
    job.analyze()
    job.write(120, 150)
    lines = []
    job.analyze(report=lines.append)  # incremental
    small = (read_trends(job.engine), read_rebalance_stats(job.engine, "c1", "billing", "1h"))
    assert (spark.conf.get("spark.sql.adaptive.enabled"), spark.conf.get("spark.sql.codegen.factoryMode")) == (
        "false",
        "NO_CODEGEN",
    )
    # each Spark job is a fixed cost (~0.1-0.4 s warm): the run says how many it took; more would be a regression
    assert 0 < int(re.search(r"(\d+) Spark jobs", lines[-1])[1]) <= 7, lines[-1]

    shutil.rmtree(tmp_path / "history")
    monkeypatch.setattr(sizing, "BYTES_PER_PARTITION", 1)  # every step as if large: 4 partitions, adaptive
    monkeypatch.setattr(sizing, "REBALANCES_PER_PARTITION", 1)
    job.analyze(max_partitions=4)
    assert (spark.conf.get("spark.sql.shuffle.partitions"), spark.conf.get("spark.sql.adaptive.enabled")) == (
        "4",
        "true",
    )
    assert spark.conf.get("spark.sql.codegen.factoryMode") == "FALLBACK"
    strip = lambda rows: [{**r.__dict__, "run_id": 0} for r in rows]  # noqa: E731
    assert strip(read_trends(job.engine)) == strip(small[0])
    assert strip(read_rebalance_stats(job.engine, "c1", "billing", "1h")) == strip(small[1])


def test_incremental_runs_find_the_log_ends_of_a_consumer_hours_behind_through_the_index(job, monkeypatch):
    from spark import sizing

    monkeypatch.setattr(sizing, "BYTES_PER_PARTITION", 1)  # the day's points worth skimming, as on a large store
    job.write(0, 1440)  # four hours
    job.analyze()
    job.write(1440, 1470)
    job.analyze()
    # "replay" starts reading the topic from its start (offset 1000, the log end at 0:00): four hours behind,
    # its lag in seconds is exact, not a bound, from the few log-end buckets around 0:00 the index points to
    for k in range(1470, 1500):
        s = snapshot(k)
        replay = GroupSnapshot("replay", GroupState.STABLE, committed=dict.fromkeys(s.partitions, 1000))
        job.store.write_snapshot(ClusterSnapshot(s.cluster, s.taken_at, {**s.groups, "replay": replay}, s.partitions))
    lines = []
    job.analyze(report=lines.append)
    [read] = [line for line in lines if "log ends for the time lag" in line]
    minutes, total = map(int, re.search(r"(\d+) of (\d+) minutes", read).groups())
    # per topic-partition, from its smallest committed offset (replay's, 0:00) to its largest (billing's, log end
    # of 1:40), and the new samples' buckets (from 4:00): 105 + 10 minutes, not the 4 h between
    assert minutes == 115 and total >= 5 * 60, read
    [last] = [r for r in read_trends(job.engine, "c1", "replay", "1m", "") if r.bucket_start == T0 + 14_940_000]
    # offset 1000 was appended as the log end reached 1001, 10 ms after 0:00; at 4:09:50
    assert (last.lag_seconds_max, last.lag_seconds_bounded) == (14_989.99, False)

    incremental = read_trends(job.engine)
    job.analyze(since=T0, until=T0 + 14_990_000)  # every bucket again, from the raw history
    assert exact_columns(read_trends(job.engine)) == exact_columns(incremental)


def test_a_failed_run_leaves_the_watermark_and_the_next_one_reads_again(job, monkeypatch):
    job.write(0, 12)

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(load, "write_results", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        job.analyze()  # the batch 1..12 reached the history, the results did not
    assert read_analysis_watermark(job.engine) == 0
    failed = read_last_analysis(job.engine)
    assert (failed.status, failed.watermark, failed.error) == ("failed", 0, "RuntimeError: disk full")
    monkeypatch.undo()

    job.write(12, 24)
    again = job.analyze()
    assert (again.watermark, again.rows_read) == (24, 24 * 4)
    assert hour_row(job.engine).samples == 24  # the failed run's batch was discarded, not counted twice


def test_the_rebalances_run_beside_the_trends_and_a_failure_of_either_fails_the_run(job, spark, monkeypatch):
    import threading
    import time

    from spark import main, transforms

    job.write(0, 12)
    scheduler = spark.sparkContext._jsc.sc().dagScheduler()  # counts every job, whichever its group
    first = scheduler.nextJobId()
    lines = []
    job.analyze(report=lines.append)
    # the jobs of the rebalances' thread are the run's: it counts every job Spark started for it
    assert int(re.search(r"(\d+) Spark jobs", lines[-1])[1]) == scheduler.nextJobId() - first, lines[-1]

    def broken(rebalances):
        raise RuntimeError("rebalances unreadable")

    job.write(12, 24)
    monkeypatch.setattr(transforms, "compute_rebalance_stats", broken)
    with pytest.raises(RuntimeError, match="rebalances unreadable"):
        job.analyze()
    failed = read_last_analysis(job.engine)
    assert (failed.status, failed.watermark, failed.error) == ("failed", 12, "RuntimeError: rebalances unreadable")
    monkeypatch.undo()

    ended = threading.Event()
    rebalance_results = main._rebalance_results

    def slow(*args):
        time.sleep(1)  # still running when the trends fail
        try:
            return rebalance_results(*args)
        finally:
            ended.set()

    def no_trends(*args):
        raise RuntimeError("history unreadable")

    monkeypatch.setattr(main, "_rebalance_results", slow)
    monkeypatch.setattr(main, "_lag_trends", no_trends)
    with pytest.raises(RuntimeError, match="history unreadable"):
        job.analyze()
    assert ended.is_set()  # a failed run ends with its rebalances: none of its jobs runs into the next run
    monkeypatch.undo()
    assert job.analyze().watermark == 24


def test_a_missing_jdbc_driver_says_how_to_give_it(spark):
    from monitor.models import ConfigError
    from spark.extract import Jdbc, check_driver

    check_driver(spark, Jdbc("jdbc:sqlite:/x.db", "org.sqlite.JDBC"), "/j/sqlite.jar", submitted=True)
    missing = Jdbc("jdbc:postgresql://db/lagmon", "org.postgresql.NotADriver")
    with pytest.raises(ConfigError, match=r"spark-submit `--jars /j/pg\.jar --driver-class-path /j/pg\.jar` before"):
        check_driver(spark, missing, "/j/pg.jar", submitted=True)
    with pytest.raises(ConfigError, match=r"install it \(/j/pg.jar\) or name its jar in LAGMON_SPARK_JDBC_JARS"):
        check_driver(spark, missing, "/j/pg.jar", submitted=False)


def test_history_reads_and_discards_list_only_the_days_they_need(spark, tmp_path):
    from spark.extract import (
        PARTITION_OFFSETS,
        PARTITION_OFFSETS_SCHEMA,
        discard_uncommitted,
        read_history,
        write_batch,
    )

    day = 86_400_000
    history = str(tmp_path / "history")
    for batch, d in enumerate((0, 1, 2), 1):  # a batch on each of three days
        rows = [("c", "t", 0, batch, d * day + 1000, 0, 10 * batch)]
        write_batch(spark.createDataFrame(rows, PARTITION_OFFSETS_SCHEMA), history, PARTITION_OFFSETS, batch)
    read = read_history(spark, history, PARTITION_OFFSETS, 2 * day, 3 * day, 3)
    assert [r.log_end for r in read.collect()] == [30]
    assert all("day=1970-01-03" in f for f in read.inputFiles())  # the other days were never listed
    assert read_history(spark, history, PARTITION_OFFSETS, 5 * day, 6 * day, 3).count() == 0
    assert discard_uncommitted(spark, history, 1, since=2 * day) == 1  # batch 3; batch 2 lies before `since`
    left = read_history(spark, history, PARTITION_OFFSETS, 0, 3 * day, 3)
    assert sorted(r.log_end for r in left.collect()) == [10, 20]


def test_building_a_query_sends_no_call_sites_to_the_jvm(spark, monkeypatch):
    """PySpark's DataFrame debugging is off: adding to a column is one round trip to the JVM, not ten."""
    from py4j.clientserver import ClientServerConnection
    from pyspark.sql import functions as F

    column, sent = F.col("lag"), []
    send = ClientServerConnection.send_command
    monkeypatch.setattr(ClientServerConnection, "send_command", lambda self, c: sent.append(c) or send(self, c))
    column + 1
    assert len(sent) == 1, sent


def run_in_steps(tmp_path, spark, name: str, report=lambda m: None) -> tuple[list, dict]:
    """A store of 60 samples, then 4 runs of 5 new samples each, under tmp_path/name: (its trends, its history's
    rows and batch folders per dataset)."""
    url = f"sqlite:///{tmp_path / name}.db"
    upgrade(url)
    engine, history = make_engine(url), tmp_path / f"{name}-history"
    try:
        store = Store(engine)
        for first, last in [(0, 60)] + [(k, k + 5) for k in range(60, 80, 5)]:
            for k in range(first, last):
                store.write_snapshot(snapshot(k))
            analyze_once(spark, engine, url, str(history), report=report)
        return [{**r.__dict__, "run_id": 0} for r in read_trends(engine)], {
            d.name: (
                sorted(map(tuple, spark.read.parquet(str(d)).drop("batch").collect())),
                sum(1 for day in d.iterdir() for _ in day.glob("batch=*")),
            )
            for d in sorted(history.iterdir())
        }
    finally:
        engine.dispose()


def test_compacted_history_gives_the_same_results_in_few_folders_even_after_a_stopped_merge(
    spark, tmp_path, monkeypatch
):
    from spark import compaction

    unmerged, unmerged_history = run_in_steps(tmp_path, spark, "unmerged")
    assert {name: folders for name, (_, folders) in unmerged_history.items()} == dict.fromkeys(
        ["group_offsets", "lag_partials", "log_end_index", "partition_offsets", "sample_totals"], 5
    )
    monkeypatch.setattr(compaction, "COMPACT_AT", 2)
    rename, stopped = compaction._rename, []

    def stop_before_the_first_rename(spark, fs, source, target):  # the replaced folders are gone: the worst time
        if not stopped:
            stopped.append(source)
            raise OSError("killed")
        rename(spark, fs, source, target)

    monkeypatch.setattr(compaction, "_rename", stop_before_the_first_rename)
    lines = []
    merged, history = run_in_steps(tmp_path, spark, "merged", lines.append)
    assert sum("finished 1 history compaction(s) a stopped run left" in line for line in lines) == 1
    assert merged == unmerged
    assert {name: rows for name, (rows, _) in history.items()} == {n: r for n, (r, _) in unmerged_history.items()}
    assert not list((tmp_path / "merged-history").glob(f"*/day=*/{compaction.COMPACTING}"))
    # fewer than COMPACT_AT small folders and fewer than COMPACT_AT merged ones are left of each dataset's 5
    assert all(folders <= 2 for _, folders in history.values()), history
