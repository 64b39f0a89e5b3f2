"""Benchmark: the Spark analysis on a synthetic store, against a single-process pandas baseline.

For each size (group-partition samples; 10 M = a day of 10 s samples for 1,200
group-partitions): build the store (bench/synth_store.py), time a full
analysis (JDBC extract + Parquet history + trends + rebalances + load), an
incremental run over 10 new minutes, a recompute of the whole day from the
Parquet history, and the same lag trends computed by pandas in one process
(read with sqlite3, then the same windows and statistics). Prints the ratio,
and checks the incremental runs' trend rows against the recompute's (--stages
prints the job's own per-stage timings). Each phase shows its wall time and the
CPU seconds of this process and its JVM meanwhile; the end, each one's peak RSS
(the store generation and the pandas baseline run in this process too). With
several sizes it splits the full run's time into a fixed and a per-row cost
(least squares). `--master standalone`
starts a Spark standalone master and one worker (2 cores, 4 GiB, loopback) from
the pyspark package and runs there, the driver in this process.

    .venv/bin/python bench/bench_spark.py --sizes 1000000,10000000 --master 'local[2]'
    .venv/bin/python bench/bench_spark.py --sizes 100000,1000000,3000000 --master standalone --skip-pandas
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from contextlib import ExitStack
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from proc_usage import tree_usage
from synth_store import build

from monitor.store import make_engine
from spark.transforms import LAG_WINDOWS

QUERY = """SELECT cg.cluster, cg.group_id, tp.topic, tp.partition, o.sample_id, s.taken_at, o.committed, p.log_end
FROM offset_samples o JOIN samples s ON s.id = o.sample_id JOIN group_partitions gp ON gp.id = o.gp_id
JOIN consumer_groups cg ON cg.id = gp.group_ref JOIN topic_partitions tp ON tp.id = gp.tp_id
LEFT JOIN partition_samples p ON p.sample_id = o.sample_id AND p.tp_id = gp.tp_id"""


def pandas_trends(db_path: str) -> pd.DataFrame:
    """The lag_trends computation (rates, avg/max/p95, slope, ETA, time lag) in one pandas process."""
    with sqlite3.connect(db_path) as db:
        df = pd.read_sql_query(QUERY, db)
    df["lag"] = (df.log_end - df.committed).clip(lower=0)
    gp = ["cluster", "group_id", "topic", "partition"]
    df = df.sort_values([*gp, "taken_at"], kind="stable")
    grouped = df.groupby(gp, sort=False)
    df["d_log_end"] = grouped.log_end.diff().clip(lower=0)
    df["d_committed"] = grouped.committed.diff().clip(lower=0)
    df["dt_ms"] = grouped.taken_at.diff()
    # time lag: first log-end point above the committed offset, interpolated with the one before
    seconds = np.full(len(df), np.nan)
    for _, idx in df.groupby(["cluster", "topic", "partition"], sort=False).indices.items():
        part = df.iloc[idx]
        pts = part.drop_duplicates("sample_id").sort_values("taken_at")
        ends, ats = pts.log_end.to_numpy(float), pts.taken_at.to_numpy(float)
        c = part.committed.to_numpy(float)
        j = np.searchsorted(ends, c, side="right")
        j = np.minimum(j, len(ends) - 1)
        prev = np.maximum(j - 1, 0)
        reached = np.where(
            j > 0, ats[prev] + (c - ends[prev]) * (ats[j] - ats[prev]) / np.maximum(ends[j] - ends[prev], 1), ats[j]
        )
        secs = np.maximum(0, (part.taken_at.to_numpy(float) - reached) / 1000)
        seconds[idx] = np.where(part.lag.to_numpy() == 0, 0.0, secs)
    df["lag_seconds"] = seconds
    df["dt_le"] = df.dt_ms.where(df.d_log_end.notna())
    df["dt_c"] = df.dt_ms.where(df.d_committed.notna())
    aggs = {
        "lag": ("lag", "sum"),
        "lag_seconds": ("lag_seconds", "max"),
        "d_log_end": ("d_log_end", "sum"),
        "d_committed": ("d_committed", "sum"),
        "dt_le": ("dt_le", "max"),
        "dt_c": ("dt_c", "max"),
    }
    per_topic = df.groupby(["cluster", "group_id", "topic", "taken_at"], sort=False).agg(**aggs).reset_index()
    per_group = (
        per_topic.groupby(["cluster", "group_id", "taken_at"], sort=False)
        .agg(
            lag=("lag", "sum"),
            lag_seconds=("lag_seconds", "max"),
            d_log_end=("d_log_end", "sum"),
            d_committed=("d_committed", "sum"),
            dt_le=("dt_le", "max"),
            dt_c=("dt_c", "max"),
        )
        .reset_index()
    )
    per_group["topic"] = ""
    totals = pd.concat([per_topic, per_group], ignore_index=True)
    out = []
    for name, width in LAG_WINDOWS.items():
        t = totals.assign(bucket_start=totals.taken_at // width * width)
        t["x"] = (t.taken_at - t.bucket_start) / 60_000
        t["xy"], t["xx"] = t.x * t.lag, t.x * t.x
        keys = ["cluster", "group_id", "topic", "bucket_start"]
        g = t.sort_values("taken_at").groupby(keys, sort=False)
        r = g.agg(
            samples=("lag", "size"),
            lag_avg=("lag", "mean"),
            lag_max=("lag", "max"),
            lag_last=("lag", "last"),
            sx=("x", "sum"),
            sy=("lag", "sum"),
            sxy=("xy", "sum"),
            sxx=("xx", "sum"),
            d_le=("d_log_end", "sum"),
            dt_le=("dt_le", "sum"),
            d_c=("d_committed", "sum"),
            dt_c=("dt_c", "sum"),
            ls_avg=("lag_seconds", "mean"),
            ls_max=("lag_seconds", "max"),
        )
        r["lag_p95"] = g.lag.quantile(0.95)
        r["ls_p50"] = g.lag_seconds.quantile(0.5)
        r["ls_p95"] = g.lag_seconds.quantile(0.95)
        n = r.samples
        r["lag_slope_per_min"] = (n * r.sxy - r.sx * r.sy) / (n * r.sxx - r.sx**2)
        r["produce_rate"] = r.d_le / (r.dt_le / 1000)
        r["consume_rate"] = r.d_c / (r.dt_c / 1000)
        net = r.consume_rate - r.produce_rate
        r["catch_up_eta_s"] = np.where(r.lag_last == 0, 0.0, np.where(net > 0, r.lag_last / net, np.nan))
        r["window"] = name
        out.append(r.reset_index())
    return pd.concat(out, ignore_index=True)


APPROXIMATE = ("lag_p95", "lag_seconds_p50", "lag_seconds_p95")  # of 1h and 1d buckets: from sketches


def trend_rows(db_path: str, approximate: bool = False) -> dict[tuple, tuple]:
    """lag_trends as {(cluster, group, topic, window, bucket): values}, to compare two runs' results: the
    exact columns, or (approximate) the 1h and 1d percentiles, which may differ within their rank error."""
    with sqlite3.connect(db_path) as db:
        cur = db.execute("SELECT * FROM lag_trends")
        names = [d[0] for d in cur.description]
        key = [names.index(n) for n in ("cluster", "group_id", "topic", "window", "bucket_start")]
        window = names.index("window")
        sketched = {names.index(n) for n in APPROXIMATE}
        skip = {names.index("run_id")} | ({names.index("id")} if "id" in names else set())
        sketch = lambda r, i: i in sketched and r[window] in ("1h", "1d")  # noqa: E731
        return {
            tuple(r[i] for i in key): tuple(v for i, v in enumerate(r) if i not in skip and sketch(r, i) == approximate)
            for r in cur
        }


def same_row(a: tuple | None, b: tuple) -> bool:
    """Equal, floats to 1e-9 relative (sums of doubles depend on the order Spark adds them in)."""
    if a is None or len(a) != len(b):
        return False
    return all(
        x == y or (isinstance(x, float) and isinstance(y, float) and abs(x - y) <= 1e-9 * max(abs(x), abs(y)))
        for x, y in zip(a, b, strict=True)
    )


def timed(label: str, fn):
    """Wall seconds of fn, printed with the CPU seconds of this process and its JVM meanwhile."""
    cpu, started = tree_usage(os.getpid()).cpu_s, time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - started
    cpu = tree_usage(os.getpid()).cpu_s - cpu
    print(f"  {label:<52} {seconds:8.1f} s  ({cpu:.1f} CPU-s)", flush=True)
    return result, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000000,10000000", help="group-partition samples per run, comma list")
    parser.add_argument("--group-partitions", type=int, default=1200)
    parser.add_argument("--master", default="local[2]", help="a Spark master, or `standalone` (started here)")
    parser.add_argument("--dir", default=None, help="work folder (default: a temporary one, removed)")
    parser.add_argument("--skip-pandas", action="store_true")
    parser.add_argument("--stages", action="store_true", help="print the job's own per-stage progress lines")
    args = parser.parse_args()
    from monitor.config import SparkSettings, StoreSettings
    from spark.main import analyze_once
    from spark.session import build_session

    work = Path(args.dir or tempfile.mkdtemp(prefix="bench-spark-"))
    work.mkdir(parents=True, exist_ok=True)
    stack = ExitStack()
    master, extra = args.master, {}
    if master == "standalone":
        from spark_cluster import spark_cluster

        master, _ = stack.enter_context(spark_cluster(work, cores=2, memory="4g"))
        extra = {"spark.executor.memory": "3g"}
        print(f"  standalone cluster at {master}: one worker, 2 cores, executor heap 3 GiB", flush=True)
    settings = dataclasses.replace(SparkSettings.from_env(), master=master)
    spark, start_s = timed(
        f"SparkSession start ({master})", lambda: build_session(settings, StoreSettings.from_env().database_url, extra)
    )
    quiet = (lambda m: print(f"      {m}", flush=True)) if args.stages else (lambda m: None)
    figures = []
    try:
        for size in [int(float(s)) for s in args.sizes.split(",")]:
            samples = max(2, size // args.group_partitions)
            print(
                f"\n{size:,} group-partition samples ({args.group_partitions} group-partitions x {samples} "
                f"samples of 10 s = {samples / 360:.1f} h):",
                flush=True,
            )
            run_dir = work / f"n{size}"
            shutil.rmtree(run_dir, ignore_errors=True)
            run_dir.mkdir()
            db = str(run_dir / "lagmon.db")
            url = f"sqlite:///{db}"
            # From a UTC midnight: the incremental run lands late in its day, where it reads the most (the
            # day's log ends for the time lag, the day's totals for the 1d bucket): the worst time of day.
            midnight = int(time.time() * 1000) // 86_400_000 * 86_400_000 - 86_400_000 * (1 + samples // 8640)
            store, _ = timed(
                "generate the store (sqlite3 executemany)", partial(build, db, args.group_partitions, samples, midnight)
            )
            engine = make_engine(url)
            history = str(run_dir / "history")
            analyze = partial(
                analyze_once, spark, engine, url, history, report=quiet, max_partitions=settings.shuffle_partitions
            )
            full, full_s = timed(
                "Spark full analysis (extract + trends + load)",
                analyze,
            )
            print(f"    read {full.rows_read:,} rows, wrote {full.rows_written:,} result rows")
            store.append(60)
            end_s = (store.start_ms + store.samples_written * store.interval_ms) / 1000
            at = time.strftime("%H:%M", time.gmtime(end_s))
            inc, inc_s = timed(
                f"Spark incremental run, 10 new minutes (to {at} UTC)",
                analyze,
            )
            print(f"    read {inc.rows_read:,} rows, wrote {inc.rows_written:,} result rows")
            day_from = store.start_ms
            day_to = store.start_ms + store.samples_written * store.interval_ms
            before, sketched = trend_rows(db), trend_rows(db, approximate=True)
            _, redo_s = timed(
                "Spark recompute of the whole span from Parquet",
                partial(analyze, since=day_from, until=day_to),
            )
            after = trend_rows(db)
            differ = sum(1 for key, row in after.items() if not same_row(before.get(key), row))
            print(f"    {differ:,} of {len(after):,} trend rows differ from the incremental runs' ones")
            moved = sum(1 for k, row in trend_rows(db, approximate=True).items() if row != sketched.get(k, row))
            print(f"    {moved:,} differ in their 1h/1d percentiles (from sketches: may differ within 1 % of rank)")
            pandas_s = None
            if not args.skip_pandas:
                trends, pandas_s = timed("pandas baseline: read + the same lag trends", partial(pandas_trends, db))
                print(f"    {len(trends):,} trend rows")
            figures.append((size, full_s, inc_s, redo_s, pandas_s))
            engine.dispose()
    finally:
        peaks = tree_usage(os.getpid()).peaks()  # before the JVM stops
        spark.stop()
        stack.close()
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print("\nsize         full (s)  incr. 10 min (s)  recompute (s)  pandas (s)  pandas/Spark recompute")
    for size, full_s, inc_s, redo_s, pandas_s in figures:
        ratio = f"{pandas_s / redo_s:.2f}x" if pandas_s else "-"
        print(
            f"{size:<12,} {full_s:8.1f}  {inc_s:16.1f}  {redo_s:13.1f}  "
            f"{pandas_s if pandas_s is not None else float('nan'):10.1f}  {ratio}"
        )
    if len(figures) > 1:
        (a, fa, *_), (b, fb, *_) = figures[0], figures[-1]
        print(f"growth {a:,} -> {b:,} rows ({b / a:.0f}x): full analysis took {fb / fa:.1f}x as long")
        per_row, fixed = np.polyfit([f[0] for f in figures], [f[1] for f in figures], 1)
        print(
            f"full analysis on {master}: fixed {fixed:.1f} s + {per_row * 1e6:.2f} s per million rows "
            "(least squares fit)"
        )
    print(f"peak RSS: {peaks}")
    print(
        f"(SparkSession start {start_s:.1f} s, not counted; machine shared with other jobs: "
        f"load average {os.getloadavg()[0]:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
