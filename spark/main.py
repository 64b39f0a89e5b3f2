"""The analysis job: extract new rows -> history -> transforms -> result tables.

Entry points: `python -m monitor analyze [--once | --every 5m] [--since T] [--until T]`
and, unchanged, `spark-submit spark/main.py ...` with the same options. Settings
(monitor.config, loaded here and passed down): LAGMON_DATABASE_URL (the store),
LAGMON_HISTORY_DIR (Parquet history, default .lagmon/history; any Hadoop URI such
as hdfs:// or s3a:// on a cluster), the SparkSettings of the session (spark/session.py).

Which buckets a run recomputes: those touched by the samples that arrived since
the watermark, or with --since/--until that range (e.g. after changing the
transforms). Each new sample's per-group totals are computed once and kept in
the history (sample_totals); buckets are recomputed whole from them, so the
result is the same whichever run computes it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import operator
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

if __name__ == "__main__" and __package__ in (None, ""):  # spark-submit spark/main.py: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from datetime import UTC

from monitor.clock import wall_ms
from monitor.config import LogSettings, SparkSettings, load_settings, parse_duration, parse_time
from monitor.logs import configure_logging, get_logger
from monitor.models import ConfigError, LagmonError
from monitor.stopping import stop_on_signals
from monitor.store import make_engine, read_analysis_watermark, upgrade

DAY_MS = 86_400_000
LOOKBACK_MS = 3_600_000  # history read before the first bucket: previous samples for deltas and time lag
REBALANCE_SLACK_MS = 3_600_000  # a rebalance that began up to an hour before new data may have just ended
DEFAULT_SHUFFLE_PARTITIONS = SparkSettings.shuffle_partitions  # the setting's default

log = get_logger("analyze")
T = TypeVar("T")


@dataclass(frozen=True)
class RunSummary:
    run_id: int
    watermark: int
    rows_read: int
    rows_written: int
    range_start: int | None
    range_end: int | None
    seconds: float


def history_location(history_dir: str) -> str:
    """The history folder as Spark wants it: local paths absolute, URIs (hdfs://, s3a://) untouched."""
    return history_dir if "://" in history_dir else str(Path(history_dir).resolve())


def _floor(t: int, width: int) -> int:
    return t // width * width


def compute_range(
    new_from: int | None, new_to: int | None, since: int | None, until: int | None, now: int
) -> tuple[int, int] | None:
    """The time range to recompute: --since/--until when given, else the new samples' span (None: nothing new)."""
    if since is None and until is None:
        return None if new_from is None else (new_from, new_to)
    end = until if until is not None else (new_to if new_to is not None else now)
    start = since if since is not None else end - DAY_MS
    if start > end:
        raise ConfigError("--since is after --until")
    return start, end


def bucket_ranges(windows: dict[str, int], start: int, end: int, slack: int = 0) -> dict[str, tuple[int, int]]:
    """Per window, the first and last bucket_start overlapping [start - slack, end]."""
    return {name: (_floor(start - slack, width), _floor(end, width)) for name, width in windows.items()}


def _rows(df) -> list[dict]:
    return [row.asDict() for row in df.collect()]


def _rows_of_each(*frames) -> list[list[dict]]:
    """The rows of several small results in one Spark job (each job is a fixed cost on a small store):
    each row as JSON (doubles written to round-trip), tagged with its frame's place."""
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    tagged = [
        df.select(F.lit(i).alias("of"), F.to_json(F.struct("*"), {"ignoreNullFields": "false"}).alias("row"))
        for i, df in enumerate(frames)
    ]
    rows: list[list[dict]] = [[] for _ in frames]
    for of, row in functools.reduce(DataFrame.unionByName, tagged).collect():
        rows[of].append(json.loads(row))
    return rows


def _keep(df, ranges: dict[str, tuple[int, int]]):
    from spark.transforms import in_ranges

    return df.where(in_ranges(ranges))


def analyze_once(
    spark,
    engine,
    database_url: str,
    history_dir: str,
    *,
    since: int | None = None,
    until: int | None = None,
    report=log.info,
    max_partitions: int = DEFAULT_SHUFFLE_PARTITIONS,
) -> RunSummary:
    """One run; on failure the run is recorded as failed, the watermark stays and the error is raised.

    max_partitions: the shuffle partitions of a large step (LAGMON_SPARK_SHUFFLE_PARTITIONS; spark.sizing).
    """
    from spark import compaction, extract, load
    from spark.sizing import OFFSETS_PER_PARTITION, size_shuffles

    started = wall_ms()
    clock = time.monotonic()
    say = lambda msg: report(f"[{time.monotonic() - clock:6.1f}s] {msg}")  # noqa: E731
    jobs = f"lagmon-analyze-{started}"  # the run's Spark jobs, counted at its end: its fixed cost on a small store
    spark.sparkContext.setJobGroup(jobs, "lagmon analysis run")
    jdbc = extract.build_jdbc(database_url)
    watermark = read_analysis_watermark(engine)
    if watermark and not extract.history_exists(spark, history_dir):
        # a new or wiped folder, or one an older version wrote (without a dataset added since)
        say(f"no complete history in {history_dir}: reading the store from its first sample again")
        watermark = 0
    hi, new_from, new_to = extract.read_new_samples(engine, watermark)
    dropped = extract.discard_uncommitted(spark, history_dir, watermark, new_from)
    if dropped:
        say(f"discarded {dropped} batch folder(s) of a failed run")
    if unfinished := compaction.finish_compactions(spark, history_dir):
        say(f"finished {unfinished} history compaction(s) a stopped run left")
    span = compute_range(new_from, new_to, since, until, started)
    record = load.RunRecord(
        started, hi, 0, span[0] if span else None, span[1] if span else None, spark.sparkContext.master
    )
    try:
        with _beside() as beside:  # leaving it waits for what it started: no job of a run outlives it
            # the rebalance statistics read the store, not the history: they run beside the rest of the run
            rebalances = beside(lambda: _rebalance_results(spark, engine, jdbc, span, max_partitions, say))
            rows_read = 0
            if hi > watermark:
                say(f"extract: samples {watermark + 1}..{hi} from the store")
                counts = {
                    dataset: extract.read_row_count(engine, dataset, watermark, hi)
                    for dataset in extract.HISTORY_SCHEMAS
                }
                size_shuffles(spark, max(counts.values()), OFFSETS_PER_PARTITION, max_partitions)
                with _beside() as append:
                    for dataset, n in counts.items():
                        append(functools.partial(_append, spark, jdbc, history_dir, dataset, watermark, hi, n, say))
                rows_read = sum(counts.values())
            record = load.RunRecord(started, hi, rows_read, record.range_start, record.range_end, record.master)
            if span is None:
                say("nothing new since the last run")
                trends, trend_ranges = [], {}
            else:
                new = (new_from, new_to, rows_read) if hi > watermark else None
                recompute = since is not None or until is not None
                trends, trend_ranges = _lag_trends(
                    spark, history_dir, watermark, hi, new, span, recompute, max_partitions, say
                )
            stats, ranking, protocols, rb_ranges = rebalances.result()
        results = load.Results(trends, stats, ranking, protocols, trend_ranges, rb_ranges)
        say(f"load: writing {results.rows} result rows")
        run_id = load.write_results(engine, record, results)
    except Exception as e:
        load.write_failed_run(engine, record, watermark, f"{type(e).__name__}: {e}")
        raise
    if hi > watermark:
        _compact(spark, history_dir, sorted({extract.utc_day(new_from), extract.utc_day(new_to)}), say)
    summary = RunSummary(
        run_id, hi, rows_read, results.rows, record.range_start, record.range_end, time.monotonic() - clock
    )
    ran = len(spark.sparkContext.statusTracker().getJobIdsForGroup(jobs))
    say(f"done: run {run_id}, watermark {hi}, {rows_read} rows read, {results.rows} rows written, {ran} Spark jobs")
    return summary


def _lag_trends(
    spark,
    history_dir: str,
    watermark: int,
    hi: int,
    new: tuple[int, int] | None,
    span: tuple[int, int],
    recompute: bool,
    most: int,
    say,
):
    """The lag trends of the buckets in span and their ranges; first the sample totals of the new samples.

    New samples: their per-sample totals (the costly part: time lag, deltas) are computed once and
    stored as a history batch, with their 5-minute partial aggregates and log-end index; when they are
    a small part of their day, from only their own rows, each group-partition's previous row (within the
    hour) and the log-end points the index says their time lag needs. The touched 1m / 5m buckets then aggregate stored
    totals, the touched 1h / 1d buckets merge stored partials. --since/--until recompute totals from
    the raw history instead (e.g. after changing the transforms), every bucket exact.
    """
    from pyspark.sql import functions as F

    from spark import extract, transforms
    from spark.sizing import BYTES_PER_PARTITION, OFFSETS_PER_PARTITION, parquet_bytes, size_shuffles

    start, end = span
    day_end = _floor(end, DAY_MS) + DAY_MS - 1
    day_from = _floor(start, DAY_MS)
    trend_ranges = bucket_ranges(transforms.LAG_WINDOWS, start, end)
    if new is not None:
        new_from, new_to, new_rows = new
        say(f"history: totals of samples {watermark + 1}..{hi} ({_fmt(new_from)} .. {_fmt(new_to)})")
        go = extract.read_history(spark, history_dir, extract.GROUP_OFFSETS, new_from - LOOKBACK_MS, new_to, hi)
        points_from = _floor(new_from, DAY_MS) - LOOKBACK_MS
        # pays when the day's rows are mostly old ones (a first run has none)
        pruned = watermark > 0 and new_from - _floor(new_from, DAY_MS) > new_to - new_from + LOOKBACK_MS
        if pruned:  # sized by its rows (new, their previous ones, kept points), not the day files it skims
            size_shuffles(spark, 2 * new_rows, OFFSETS_PER_PARTITION, most)
        else:
            size_shuffles(spark, parquet_bytes(go), BYTES_PER_PARTITION, most)
        new_points = extract.read_history(spark, history_dir, extract.PARTITION_OFFSETS, new_from, new_to, hi)
        index = transforms.compute_log_end_index(new_points.where(F.col("sample_id") > watermark))
        extract.write_batch(index, history_dir, extract.LOG_END_INDEX, hi)
        cached = []  # unpersisted once the totals are written (the rebalances, beside, cache their own)
        if pruned:
            go = transforms.select_new_with_previous(go, watermark).cache()  # small, and read twice
            cached.append(go)
            po = _time_lag_points(spark, history_dir, go, points_from, new_to, hi, cached, say)
        else:
            po = extract.read_history(spark, history_dir, extract.PARTITION_OFFSETS, points_from, new_to, hi)
        rows = transforms.compute_partition_rows(go, po).where(F.col("sample_id") > watermark)
        totals = transforms.compute_sample_totals(rows).cache()  # written, then summed into the partials
        cached.append(totals)
        extract.write_batch(totals, history_dir, extract.SAMPLE_TOTALS, hi)
        extract.write_batch(transforms.compute_lag_partials(totals), history_dir, extract.LAG_PARTIALS, hi)
        for df in cached:
            df.unpersist()
        say("history: totals and their 5-minute partials appended")
    if recompute:
        load_from = day_from - LOOKBACK_MS
        say(f"history: {_fmt(load_from)} .. {_fmt(day_end)} (recomputing {_fmt(start)} .. {_fmt(end)})")
        go = extract.read_history(spark, history_dir, extract.GROUP_OFFSETS, load_from, day_end, hi)
        po = extract.read_history(spark, history_dir, extract.PARTITION_OFFSETS, load_from, day_end, hi)
        size_shuffles(spark, parquet_bytes(go, po), BYTES_PER_PARTITION, most)
        totals = transforms.compute_sample_totals(transforms.compute_partition_rows(go, po)).where(
            F.col("taken_at") >= day_from
        )
        partials = None  # every bucket from these totals, percentiles exact
    else:  # the touched 1m and 5m buckets' totals; the day's partials for its 1h and 1d buckets
        exact = [w for w, width in transforms.LAG_WINDOWS.items() if width <= transforms.PARTIAL_MS]
        exact_from = min(trend_ranges[w][0] for w in exact)
        totals = extract.read_history(spark, history_dir, extract.SAMPLE_TOTALS, exact_from, day_end, hi)
        partials = extract.read_history(spark, history_dir, extract.LAG_PARTIALS, day_from, day_end, hi)
        size_shuffles(spark, parquet_bytes(totals, partials), BYTES_PER_PARTITION, most)
    trends = _rows(transforms.compute_lag_trends(totals, transforms.LAG_WINDOWS, trend_ranges, partials))
    say(f"trends: {len(trends)} rows ({len(transforms.LAG_WINDOWS)} windows, per group and group x topic)")
    return trends, trend_ranges


def _rebalance_results(spark, engine, jdbc, span: tuple[int, int] | None, most: int, say):
    """(bucket statistics, stability ranking, protocol comparison, bucket ranges) of the rebalances around span.

    Run on a session of its own (SparkSession.newSession), beside the trends: its shuffle settings are its own.
    """
    from spark import extract, transforms
    from spark.sizing import REBALANCES_PER_PARTITION, size_shuffles

    if span is None:
        return [], [], [], {}
    spark = spark.newSession()
    start, end = span
    day_end = _floor(end, DAY_MS) + DAY_MS - 1
    rb_ranges = bucket_ranges(transforms.REBALANCE_WINDOWS, start, end, REBALANCE_SLACK_MS)
    rb_from = min(first for first, _ in rb_ranges.values())
    rb_since = min(rb_from, end - DAY_MS)
    size_shuffles(spark, extract.read_rebalance_count(engine, rb_since, day_end), REBALANCES_PER_PARTITION, most)
    rb = extract.read_rebalances(spark, jdbc, rb_since, day_end).cache()  # read three times, filled by the first
    stats, ranking, protocols = _rows_of_each(
        _keep(transforms.compute_rebalance_stats(rb), rb_ranges),
        transforms.compute_stability_ranking(rb, end - DAY_MS, end + 1),
        transforms.compute_protocol_comparison(rb, end - DAY_MS, end + 1),
    )
    rb.unpersist()
    say(f"rebalances: {len(stats)} bucket rows, {len(ranking)} groups ranked, {len(protocols)} protocols")
    return stats, _columns(ranking, RANKING_COLUMNS), _columns(protocols, PROTOCOL_COLUMNS), rb_ranges


def _append(spark, jdbc, history_dir: str, dataset: str, watermark: int, hi: int, rows: int, say) -> None:
    """The dataset's new rows, from the store to a history batch."""
    from spark import extract

    extract.write_batch(extract.extract_batch(spark, jdbc, dataset, watermark, hi, rows), history_dir, dataset, hi)
    say(f"extract: {dataset}: {rows} rows appended to the history")


@contextlib.contextmanager
def _beside() -> Iterator[Callable[[Callable[[], T]], futures.Future[T]]]:
    """start(work) runs work on a thread of its own, its Spark jobs in this thread's job group (InheritableThread).

    Each Spark job of a small run is mostly fixed cost (planning, scheduling, committing files), which
    jobs started at once pay together. Leaving waits for every work started, then raises the first
    error, unless one was raised inside already.
    """
    from pyspark import InheritableThread

    started: list[futures.Future] = []

    def start(work: Callable[[], T]) -> futures.Future[T]:
        future: futures.Future[T] = futures.Future()

        def run() -> None:
            try:
                future.set_result(work())
            except BaseException as e:  # raised where the result is taken
                future.set_exception(e)

        InheritableThread(target=run, daemon=True).start()
        started.append(future)
        return future

    try:
        yield start
    finally:
        futures.wait(started)
    for future in started:
        future.result()


def _compact(spark, history_dir: str, days: list[str], say) -> None:
    """Merge the small batch folders the run's days have piled up (spark/compaction.py). The run is
    committed already: a compaction that fails is finished or redone by the next run."""
    from spark import compaction

    try:
        merged = compaction.compact_history(spark, history_dir, days)
    except Exception as e:
        log.warning("history: compacting %s failed, the next run finishes it: %s: %s", days, type(e).__name__, e)
        return
    if merged:
        say(f"history: {merged} merge(s) of small batch folders ({', '.join(days)})")


def _time_lag_points(spark, history_dir: str, go, since: int, until: int, hi: int, cached: list, say):
    """The log-end points the new samples' time lag needs (transforms.select_time_lag_buckets): the log-end
    index from `since` (the day's start, less the look-back) tells which buckets. When the day's points are
    more than a partition, only those buckets' minutes are read (a job to list them; the buckets are cached,
    and added to `cached`); else they are joined.

    Consumers hours behind would otherwise have every run read hours of points, of which they use a few.
    """
    from pyspark.sql import functions as F

    from spark import extract, transforms
    from spark.sizing import BYTES_PER_PARTITION, parquet_bytes

    index = extract.read_history(spark, history_dir, extract.LOG_END_INDEX, since, until, hi)
    points = extract.read_history(spark, history_dir, extract.PARTITION_OFFSETS, since, until, hi)
    if parquet_bytes(points) <= BYTES_PER_PARTITION:
        return transforms.select_time_lag_points(points, transforms.select_time_lag_buckets(index, go))
    index = index.cache()  # read three times
    buckets = transforms.select_time_lag_buckets(index, go).cache()  # small: its kept buckets, then joined
    cached.append(buckets)
    starts = [r.bucket_start for r in buckets.where("kept").select("bucket_start").distinct().collect()]
    index.unpersist()
    spans = transforms.bucket_spans(starts)
    minutes = sum(last + 1 - first for first, last in spans) // 60_000
    say(f"history: log ends for the time lag: {minutes} of {(until - since) // 60_000} minutes, {len(spans)} span(s)")
    spans = [F.col("taken_at").between(first, last) for first, last in spans]
    return transforms.select_time_lag_points(points.where(functools.reduce(operator.or_, spans, F.lit(False))), buckets)


RANKING_COLUMNS = (
    "cluster",
    "group_id",
    "rank",
    "window_start",
    "window_end",
    "protocol",
    "rebalances",
    "per_hour",
    "total_duration_ms",
    "mean_duration_ms",
    "partitions_moved",
)
PROTOCOL_COLUMNS = (
    "cluster",
    "protocol",
    "window_start",
    "window_end",
    "groups",
    "rebalances",
    "per_group",
    "mean_duration_ms",
    "p95_duration_ms",
    "mean_partitions_moved",
)


def _columns(rows: list[dict], names: tuple[str, ...]) -> list[dict]:
    return [{n: r[n] for n in names} for r in rows]


def _fmt(ms: int) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


# -- command line -------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--once", action="store_true", help="one run, then exit (the default)")
    how.add_argument("--every", metavar="DURATION", help="repeat, e.g. 5m, keeping one SparkSession")
    parser.add_argument("--since", help="recompute from (ISO-8601 UTC, or relative: --since=-1d)")
    parser.add_argument("--until", help="recompute up to (ISO-8601 UTC, or relative: --until=-1h)")


def run(args: argparse.Namespace) -> int:
    """Run once or every --every until Ctrl-C/SIGTERM; a repeating run survives a failed run.

    With --every, any number of SIGTERMs and SIGINTs stop it (monitor.stopping) at once, also
    during the start-up or a run (whose Spark jobs are cancelled: see _cancel_jobs_once_stopped).
    """
    from spark import extract
    from spark.session import build_session, jdbc_jar, under_spark_submit

    url = load_settings().store.database_url
    spark_settings = SparkSettings.from_env()
    every = parse_duration(args.every, "--every") if args.every else None
    stop = threading.Event()
    if every is not None and threading.current_thread() is threading.main_thread():
        stop_on_signals(stop)
    history_dir = history_location(spark_settings.history_dir)
    missing = lambda: url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists()  # noqa
    if missing() and every is not None:  # started together with the collector (make demo): wait for it
        log.info("waiting for the collector to create %s", url.removeprefix("sqlite:///"))
        while missing() and not stop.wait(1):
            pass
    if stop.is_set():
        log.info("stopped")
        return 0
    if missing():
        raise ConfigError(
            f"no database at {url.removeprefix('sqlite:///')}: run `python -m monitor collect` first "
            f"(or set LAGMON_DATABASE_URL)"
        )
    engine = make_engine(url)
    upgrade(engine)
    log.info("store %s, history %s", _safe(url), history_dir)
    if spark_settings.driver_quick_jit is None and not under_spark_submit():
        spark_settings = _compilers_for_the_work_ahead(
            spark_settings, engine, history_dir, bool(args.since or args.until), every is not None
        )
    spark = build_session(spark_settings, url)
    log.info("Spark %s on %s", spark.version, spark.sparkContext.master)
    extract.check_driver(spark, extract.build_jdbc(url), jdbc_jar(spark_settings, url), submitted=under_spark_submit())
    if every is not None and threading.current_thread() is threading.main_thread():
        stop_on_signals(stop)  # again: the SparkContext took SIGINT over (cancel its jobs, raise KeyboardInterrupt)
        threading.Thread(
            target=_cancel_jobs_once_stopped, args=(stop, spark), name="cancel-on-stop", daemon=True
        ).start()
    try:
        while not stop.is_set():
            now = wall_ms()
            since = parse_time(args.since, now, "--since") if args.since else None
            until = parse_time(args.until, now, "--until") if args.until else None
            try:
                analyze_once(
                    spark,
                    engine,
                    url,
                    history_dir,
                    since=since,
                    until=until,
                    max_partitions=spark_settings.shuffle_partitions,
                )
            except LagmonError:
                raise
            except Exception as e:
                if every is None:
                    raise
                if not stop.is_set():
                    log.error("run failed (will retry in %gs): %s: %s", every, type(e).__name__, e)
            if every is None:
                return 0
            stop.wait(every)
    except KeyboardInterrupt:
        return 130
    finally:
        spark.stop()
        engine.dispose()
    log.info("stopped")
    return 0


def _compilers_for_the_work_ahead(
    settings: SparkSettings, engine, history_dir: str, recompute: bool, repeating: bool
) -> SparkSettings:
    """The settings with the driver's compilers chosen (auto) by the rows the first run will read."""
    from spark import extract
    from spark.session import resolve_quick_jit

    wiped = "://" not in history_dir and not Path(history_dir).exists()  # the run reads the whole store again
    ahead = extract.read_rows_ahead(engine, 0 if wiped else read_analysis_watermark(engine))
    quick = resolve_quick_jit(None, ahead, recompute, repeating)
    log.info("driver JVM: %s compiler (%s rows not yet analysed)", "quick" if quick else "optimising", f"{ahead:,}")
    return dataclasses.replace(settings, driver_quick_jit=quick)


def _cancel_jobs_once_stopped(stop: threading.Event, spark) -> None:
    """After a stop, cancel every Spark job until the session is stopped, so that a run in progress ends now.

    A first run over a big store takes minutes, more than `docker stop` waits. The run fails at its
    next job and is recorded as failed: the watermark stays and the next start redoes it.
    """
    stop.wait()
    while True:
        try:
            spark.sparkContext.cancelAllJobs()
        except Exception:  # the session is stopped: nothing left to cancel
            return
        time.sleep(0.2)


def _safe(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark-submit spark/main.py", description=__doc__.split("\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    configure_logging()
    try:
        settings = LogSettings.from_env()
        configure_logging(settings.format, settings.level)
        return run(args)
    except LagmonError as e:
        log.error("%s", e)
        return 2


if __name__ == "__main__":
    sys.exit(main())
