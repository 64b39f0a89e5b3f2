"""`python -m spark.write_class_archive`: write this environment's driver class archive (spark/class_archive.py).

It runs one job of each kind (JDBC, Parquet, the lag and rebalance transforms) in a new driver JVM
that writes the classes it loaded to the archive as it exits. That JVM runs on the quick compiler
only: the classes are the same, and on the 2-core project machine the run took 44-52 CPU-s and
44-52 s instead of 78 CPU-s and 57 s (2026-11-29). `make setup` runs it; run it again
after changing LAGMON_SPARK_JDBC_JARS or the store's kind (the archive is per JDBC jar).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from monitor import class_archives, jvm
from monitor.config import SparkSettings
from spark.class_archive import archive_path


def write_archive(settings: SparkSettings, database_url: str, target: Path | None = None) -> Path:
    """Run one job of each kind in a new driver JVM that writes the classes it loaded to the archive as it exits.

    The JVM must be this process's first: PySpark's gateway exits when its stdin closes, which is
    when the archive is written (it appears whole after that; a failed run leaves none).
    """
    from pyspark import SparkContext

    from spark.session import build_session, jdbc_jar

    target = target or archive_path(jdbc_jar(settings, database_url))
    target.parent.mkdir(parents=True, exist_ok=True)
    with class_archives.writing(target) as archive_options:
        options = {"spark.driver.extraJavaOptions": " ".join((*archive_options, jvm.QUICK_JIT))}
        spark = build_session(settings, database_url, options)
        driver = SparkContext._gateway.proc
        try:
            with tempfile.TemporaryDirectory(prefix="lagmon-class-archive-") as work:
                _run_each_kind_of_job(spark, work, database_url.startswith("sqlite"))
        finally:
            spark.stop()
            driver.stdin.close()
            driver.wait(600)
    return target


def _run_each_kind_of_job(spark, work: str, sqlite_driver: bool) -> None:
    from monitor.store import make_engine, upgrade
    from spark import extract, transforms

    if sqlite_driver:  # the JDBC reads, from an empty store of the current schema
        url = f"sqlite:///{work}/store.db"
        upgrade(make_engine(url))
        jdbc = extract.build_jdbc(url)
        for rows in (0, extract.STORE_JOINS_UP_TO + 1):  # joined by the store, and in Spark
            extract.extract_batch(spark, jdbc, extract.GROUP_OFFSETS, 0, 1, rows).collect()
        extract.read_rebalances(spark, jdbc, 0, 1).collect()
    minute = 60_000
    group_offsets = [("c", "g", "t", 0, i, i * minute, 100 + 10 * i) for i in range(1, 30)]
    partition_offsets = [("c", "t", 0, i, i * minute, 0, 100 + 15 * i) for i in range(1, 30)]
    history = f"{work}/history"
    for dataset, rows in ((extract.GROUP_OFFSETS, group_offsets), (extract.PARTITION_OFFSETS, partition_offsets)):
        extract.write_batch(spark.createDataFrame(rows, extract.DATASET_SCHEMAS[dataset]), history, dataset, 1)
    go, po = (
        extract.read_history(spark, history, d, 0, 30 * minute, 1)
        for d in (extract.GROUP_OFFSETS, extract.PARTITION_OFFSETS)
    )
    extract.write_batch(transforms.compute_log_end_index(po), history, extract.LOG_END_INDEX, 1)
    index = extract.read_history(spark, history, extract.LOG_END_INDEX, 0, 30 * minute, 1)
    buckets = transforms.select_time_lag_buckets(index, go)
    buckets.where("kept").select("bucket_start").distinct().collect()
    totals = transforms.compute_sample_totals(
        transforms.compute_partition_rows(go, transforms.select_time_lag_points(po, buckets))
    )
    extract.write_batch(totals, history, extract.SAMPLE_TOTALS, 1)
    totals = extract.read_history(spark, history, extract.SAMPLE_TOTALS, 0, 30 * minute, 1)
    extract.write_batch(transforms.compute_lag_partials(totals), history, extract.LAG_PARTIALS, 1)
    partials = extract.read_history(spark, history, extract.LAG_PARTIALS, 0, 30 * minute, 1)
    transforms.compute_lag_trends(totals, partials=partials).collect()  # an incremental run's
    transforms.compute_lag_trends(totals).collect()  # a recompute's
    members = '[{"member_id": "m", "client_id": "c", "host": "/h", "instance_id": null}]'
    rebalance = ("c", "g", "consumer", "member_joined", 1, 2, members, "[]", 3)  # but its start and end
    rebalances = spark.createDataFrame(
        [(*rebalance[:2], i * minute, i * minute + 500, *rebalance[2:]) for i in range(9)], extract.REBALANCES_SCHEMA
    )
    transforms.compute_rebalance_stats(rebalances).collect()
    transforms.compute_stability_ranking(rebalances, 0, 10 * minute).collect()
    transforms.compute_protocol_comparison(rebalances, 0, 10 * minute).collect()


def main(argv: list[str] | None = None) -> int:
    import argparse

    from monitor.config import SparkSettings, load_settings
    from spark.session import jdbc_jar

    parser = argparse.ArgumentParser(prog="python -m spark.write_class_archive", description=__doc__.split("\n")[0])
    parser.add_argument("--if-missing", action="store_true", help="only when there is none for this environment")
    args = parser.parse_args(argv)
    settings, url = SparkSettings.from_env(), load_settings().store.database_url
    target = archive_path(jdbc_jar(settings, url))
    if args.if_missing and target.exists():
        return 0
    started = time.monotonic()
    path = write_archive(settings, url, target)
    print(f"wrote {path} ({path.stat().st_size / 2**20:.0f} MiB) in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
