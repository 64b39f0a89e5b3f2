"""Pure DataFrame -> DataFrame transforms: lag trends and rebalance frequency.

Inputs are the history's shapes (see spark.extract): group offsets (one row per
group-partition per sample), partition offsets (log end per topic-partition per
sample) and rebalances. No I/O here, so every function is tested on inline data.

Lag and lag in seconds have one definition, monitor/lag.py's compute_lag and
compute_time_lag, which compute_partition_rows computes in columns (no UDF);
tests/support/lag_cases.py holds the cases both are tested against.

Times are epoch ms UTC; buckets are tumbling and aligned to the epoch, so a
bucket's rows are the same whichever run computes them (that makes loads
idempotent: a run replaces whole buckets).
"""

from __future__ import annotations

import functools

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

LAG_WINDOWS = {"1m": 60_000, "5m": 300_000, "1h": 3_600_000, "1d": 86_400_000}
REBALANCE_WINDOWS = {"1h": 3_600_000, "1d": 86_400_000}
GROUP_LEVEL = ""  # lag_trends.topic of the whole-group rows
TOP_N = 3  # members / hosts / client ids named per rebalance bucket

MEMBER_REFS = "array<struct<member_id:string,client_id:string,host:string,instance_id:string>>"
_TP = ["cluster", "topic", "partition"]
INDEX_MS = 300_000  # a log-end index bucket (compute_log_end_index): 30 points of a 10 s collector
_RUN = ("taken_at", "log_end", "sample_id")  # the point a run of left-out log-end buckets becomes
_GP = ["cluster", "group_id", "topic", "partition"]


# -- lag per group-partition sample --------------------------------------------------


def compute_partition_rows(group_offsets: DataFrame, partition_offsets: DataFrame) -> DataFrame:
    """Each group-partition sample with its log end, lag, lag in seconds and progress since the previous one.

    Points (log ends) and queries (committed offsets) of a topic-partition go
    through one shuffle and three sorts of the same partitions: by time (the
    log end of the query's own sample, the running maximum, the point before
    each point), by offset (time lag), and by group and time (deltas).

    lag: monitor.lag.compute_lag: log_end - committed, never negative; None
    without a commit (or with Kafka's -1) or without a log end in the sample.

    lag_seconds, lag_seconds_bounded: monitor.lag.compute_time_lag(committed,
    history, taken_at) with the history = the topic-partition's points up to
    the query's own time, in columns. Over the running maximum of the log end,
    the first point in time above committed is the point with the smallest
    such maximum: a running `last` over offsets in descending order finds it
    for every query at once, and the point before it in time is at or below
    committed, so the interpolation at committed + 1 never divides by 0. As
    there: 0 at or past the newest log end, never negative, a lower bound
    (lag_seconds_bounded) for a committed offset older than the history, and
    None without a commit, without history, or for a bound of 0 s.

    d_log_end, d_committed, dt_ms: against the same group-partition's previous
    sample (a delta belongs to the later sample's bucket). Offsets going
    backwards (topic recreated, consumer reset) count as 0 progress.
    """
    rows = _with_time_lag(_with_log_end_and_lag(_points_and_queries(group_offsets, partition_offsets)))
    return _with_progress(rows).select(
        *_TP,
        "group_id",
        "sample_id",
        "taken_at",
        "committed",
        "log_end",
        "lag",
        "lag_seconds",
        "lag_seconds_bounded",
        "d_log_end",
        "d_committed",
        "dt_ms",
    )


def _points_and_queries(group_offsets: DataFrame, partition_offsets: DataFrame) -> DataFrame:
    """Log ends (points, `_query` 0) and committed offsets (queries, 1) in one frame, the offset in `_offset`."""
    points = partition_offsets.select(
        *_TP,
        "sample_id",
        "taken_at",
        F.col("log_end").alias("_offset"),
        F.lit(0).alias("_query"),
        F.lit(None).cast("string").alias("group_id"),
        F.lit(None).cast("long").alias("committed"),
    )
    queries = group_offsets.select(
        *_TP,
        "sample_id",
        "taken_at",
        F.col("committed").alias("_offset"),
        F.lit(1).alias("_query"),
        "group_id",
        "committed",
    )
    return points.unionByName(queries)


def _with_log_end_and_lag(rows: DataFrame) -> DataFrame:
    """The sort by time: each query's log end (of its own sample) and lag; each point with the running
    maximum of the log end (`_top`) and the point before it, as `_point` for the sweep by offset."""
    is_point, is_query = F.col("_query") == 0, F.col("_query") == 1
    # sample_id orders points of one millisecond (two collector shards): the point found below is then
    # the first to reach its running maximum, and the one before it is strictly lower
    by_time = Window.partitionBy(*_TP).orderBy("taken_at", "_query", "sample_id")
    so_far = by_time.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    rows = (
        rows.withColumn("_top", F.max(F.when(is_point, F.col("_offset"))).over(so_far))
        .withColumn(
            "_pt",
            F.when(
                is_point,
                F.struct(
                    F.col("taken_at").alias("at"),
                    F.col("_top").alias("end"),
                    F.col("_offset").alias("log_end"),
                    F.col("sample_id").alias("sample_id"),
                ),
            ),
        )
        .withColumn("_last", F.last("_pt", ignorenulls=True).over(so_far))
        .withColumn("_before", F.last("_pt", ignorenulls=True).over(by_time.rowsBetween(Window.unboundedPreceding, -1)))
    )
    c = F.col("committed")
    log_end = F.when(F.col("_last.sample_id") == F.col("sample_id"), F.col("_last.log_end"))
    lag = F.when(c.isNull() | (c < 0) | F.col("log_end").isNull(), F.lit(None).cast("long")).otherwise(
        F.greatest(F.lit(0).cast("long"), F.col("log_end") - c)
    )
    return (
        rows.withColumn("log_end", F.when(is_query, log_end))
        .withColumn("lag", lag)
        .withColumn("_key", F.when(is_point, F.col("_top")).otherwise(c))
        .withColumn(
            "_point",
            F.when(
                is_point,
                F.struct(
                    F.col("taken_at").alias("at"),
                    F.col("_top").alias("end"),
                    F.col("_before.at").alias("prev_at"),
                    F.col("_before.end").alias("prev_end"),
                ),
            ),
        )
    )


def _with_time_lag(rows: DataFrame) -> DataFrame:
    """The sweep by offset: each query's lag in seconds from the first point above its committed offset;
    only the queries are kept."""
    sweep = (
        Window.partitionBy(*_TP)
        .orderBy(
            F.col("_key").desc_nulls_last(), F.col("_query").desc(), F.col("taken_at").desc(), F.col("sample_id").desc()
        )
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    rows = rows.withColumn("_found", F.last("_point", ignorenulls=True).over(sweep)).where(F.col("_query") == 1)
    c, p, t, top = F.col("committed"), F.col("_found"), F.col("taken_at"), F.col("_top")
    appended_at = p["prev_at"] + (c + 1 - p["prev_end"]) / (p["end"] - p["prev_end"]) * (p["at"] - p["prev_at"])
    behind = c.isNotNull() & (c >= 0) & (c < top)
    bound = (t - p["at"]) / 1000.0
    seconds = (
        F.when(c.isNull() | (c < 0) | top.isNull(), F.lit(None))
        .when(~behind, F.lit(0.0))
        .when(p["prev_at"].isNull(), F.when(bound > 0, bound))
        .otherwise(F.greatest(F.lit(0.0), (t - appended_at) / 1000.0))
    ).cast("double")
    bounded = behind & p["prev_at"].isNull() & (bound > 0)
    return rows.withColumn("lag_seconds", seconds).withColumn("lag_seconds_bounded", F.coalesce(bounded, F.lit(False)))


def _with_progress(rows: DataFrame) -> DataFrame:
    """The sort by group and time: log end, committed offset and time since the group-partition's previous
    sample (offsets going backwards count as 0 progress)."""
    prev = Window.partitionBy(*_TP).orderBy("group_id", "taken_at")
    same = F.lag("group_id").over(prev) == F.col("group_id")

    def delta(name: str) -> Column:
        step = F.col(name) - F.lag(name).over(prev)
        return F.when(same & step.isNotNull(), F.greatest(F.lit(0).cast("long"), step))

    return (
        rows.withColumn("d_log_end", delta("log_end"))
        .withColumn("d_committed", delta("committed"))
        .withColumn("dt_ms", F.when(same, F.col("taken_at") - F.lag("taken_at").over(prev)))
    )


def select_new_with_previous(group_offsets: DataFrame, watermark: int) -> DataFrame:
    """Group offsets of samples after the watermark, plus each group-partition's latest one before (for deltas)."""
    old = group_offsets.where(F.col("sample_id") <= watermark)
    previous = (
        old.groupBy(*_GP)
        .agg(F.max_by(F.struct(*[c for c in old.columns if c not in _GP]), "taken_at").alias("_r"))
        .select(*_GP, "_r.*")
    )
    return group_offsets.where(F.col("sample_id") > watermark).unionByName(previous)


def _position() -> Column:
    """The committed offset where it is one (not None, not Kafka's -1): the queries that have a lag in seconds."""
    return F.when(F.col("committed") >= 0, F.col("committed"))


def _bucket(at: str, width: int) -> Column:
    return F.col(at) - F.col(at) % width


def compute_log_end_index(partition_offsets: DataFrame, width: int = INDEX_MS) -> DataFrame:
    """Per topic-partition and time bucket of these log-end points: the highest log end, the newest time and
    sample id. Stored beside the points, so a run finds the few buckets its time lag needs
    (select_time_lag_buckets) in ~30x fewer rows than hours of points. A bucket a run ended in has a row
    from each run that wrote some of its points.
    """
    return partition_offsets.groupBy(*_TP, _bucket("taken_at", width).alias("bucket_start")).agg(
        F.max("log_end").alias("top"), F.max("taken_at").alias("last_at"), F.max("sample_id").alias("last_sample")
    )


def select_time_lag_buckets(index: DataFrame, group_offsets: DataFrame, width: int = INDEX_MS) -> DataFrame:
    """Which log-end points compute_partition_rows needs for the time lag of these group offsets (its queries).

    Per topic-partition, from its log-end index (compute_log_end_index): the buckets from the one where the
    log end first passed the smallest committed offset (or the queries' first, if older) to the one where it
    passed the largest, and from the queries' first on: rows with `kept` true, whose points are read. Each
    run of buckets left out, before or between those, becomes one point (`kept` false): its newest time,
    highest log end and newest sample id (one no query shares: queries are from their first bucket on), so
    the running maximum over the points read is the one over all of them. A committed offset lies between
    the smallest and the largest, so the first point above it and the one before it are read, or are that
    run's point: the same lag_seconds as the whole history. Topic-partitions without group offsets are dropped.
    """
    queries = group_offsets.groupBy(*_TP).agg(
        F.min(_position()).alias("_min"), F.max(_position()).alias("_max"), F.min("taken_at").alias("_from")
    )
    passed = lambda offset: F.min(F.when(F.col("top") > F.col(offset), F.col("bucket_start")))  # noqa: E731
    bounds = (
        index.join(F.broadcast(queries), _TP)
        .groupBy(*_TP)
        .agg(passed("_min").alias("_low"), passed("_max").alias("_high"), F.first("_from").alias("_from"))
        .withColumn("_from", _bucket("_from", width))
    )
    b = F.col("bucket_start")
    part = (
        F.when(b < F.least("_from", "_low"), F.lit("before"))
        .when((b >= F.col("_from")) | F.col("_high").isNull() | (b <= F.col("_high")), F.lit(None))
        .otherwise(F.lit("between"))
    )
    parts = index.join(F.broadcast(bounds), _TP).withColumn("_part", part)
    runs = (
        parts.where(F.col("_part").isNotNull())
        .groupBy(*_TP, "_part")
        .agg(F.max("last_at").alias("taken_at"), F.max("top").alias("log_end"), F.max("last_sample").alias("sample_id"))
    )
    no_point = [F.lit(None).cast(t).alias(c) for c, t in zip(_RUN, ("long", "long", "int"), strict=True)]
    return (
        parts.where(F.col("_part").isNull())
        .select(*_TP, "bucket_start")
        .distinct()  # a bucket a run ended in has a row from each run
        .select(*_TP, "bucket_start", F.lit(True).alias("kept"), *no_point)
        .unionByName(
            runs.select(*_TP, F.lit(None).cast("long").alias("bucket_start"), F.lit(False).alias("kept"), *_RUN)
        )
    )


def select_time_lag_points(points: DataFrame, buckets: DataFrame, width: int = INDEX_MS) -> DataFrame:
    """The points of select_time_lag_buckets' kept buckets, and its runs left out as one point each."""
    kept = buckets.where("kept").select(*_TP, "bucket_start")
    read = points.withColumn("bucket_start", _bucket("taken_at", width)).join(F.broadcast(kept), [*_TP, "bucket_start"])
    runs = buckets.where(~F.col("kept")).select(*_TP, *_RUN, F.lit(None).cast("long").alias("log_start"))
    return read.select(*points.columns).unionByName(runs.select(*points.columns))


def bucket_spans(starts: list[int], width: int = INDEX_MS, most: int = 32) -> list[tuple[int, int]]:
    """Time spans [first, last] ms covering these buckets, contiguous ones joined, then the nearest ones
    until at most `most` are left: the filter a read of the kept buckets' points hands Parquet."""
    spans: list[list[int]] = []
    for start in sorted(set(starts)):
        if spans and start <= spans[-1][1] + 1:
            spans[-1][1] = start + width - 1
        else:
            spans.append([start, start + width - 1])
    while len(spans) > most:
        i = min(range(len(spans) - 1), key=lambda k: spans[k + 1][0] - spans[k][1])
        spans[i : i + 2] = [[spans[i][0], spans[i + 1][1]]]
    return [(a, b) for a, b in spans]


# -- lag trends ------------------------------------------------------------------------


def compute_sample_totals(partition_rows: DataFrame) -> DataFrame:
    """Per group x topic and per whole group (topic ''), one row per sample.

    Rates sum the partitions' deltas over the sample spacing: the partitions of
    a group are sampled together, so that equals the sum of per-partition rates.
    Both levels come from one aggregation (grouping sets), so the rows are computed once.
    """
    keys = ["cluster", "group_id", "topic", "taken_at"]
    totals = partition_rows.groupingSets([keys, ["cluster", "group_id", "taken_at"]], *keys).agg(
        F.sum("lag").alias("lag"),
        F.max("lag_seconds").alias("lag_seconds"),
        F.max(F.col("lag_seconds_bounded").cast("int")).alias("bounded"),
        F.sum("d_log_end").alias("d_log_end"),
        F.sum("d_committed").alias("d_committed"),
        F.max(F.when(F.col("d_log_end").isNotNull(), F.col("dt_ms"))).alias("dt_log_end"),
        F.max(F.when(F.col("d_committed").isNotNull(), F.col("dt_ms"))).alias("dt_committed"),
        F.grouping("topic").alias("_whole_group"),
    )
    return totals.withColumn(
        "topic", F.when(F.col("_whole_group") == 1, F.lit(GROUP_LEVEL)).otherwise(F.col("topic"))
    ).drop("_whole_group")


def in_ranges(ranges: dict[str, tuple[int, int]]) -> Column:
    """window/bucket_start within the given [first, last] bucket starts of its window."""
    cond = F.lit(False)
    for window, (first, last) in ranges.items():
        cond = cond | ((F.col("window") == window) & F.col("bucket_start").between(first, last))
    return cond


EXACT = "decimal(38,0)"  # sums of integers: the same whatever order Spark adds rows in
MS = "decimal(38,3)"  # lag in seconds, to the millisecond
PARTIAL_MS = LAG_WINDOWS["5m"]  # a lag partial covers one such bucket; wider windows merge them
# KLL sketches (Apache DataSketches, built into Spark): exact up to this many values (1h at a 10 s cadence),
# beyond it a quantile's rank error is within ~0.3 % at 99 % confidence (DataSketches gives 1.33 % for
# k = 200, shrinking as 1/k); a merged sketch keeps ~3,000 values
SKETCH_K = 1000


def _slope_per_min(n: Column, sx: Column, sy: Column, sxy: Column, sxx: Column) -> Column:
    """Least-squares slope of y over time per minute, like regr_slope, but from exact integer sums.

    x is the time in ms from the bucket's start; the sums are decimals, so the result does not depend
    on the order Spark adds rows in (a bucket recomputed by another run gives the very same double),
    and sums of 5-minute partials shifted to a wider bucket's start are the sums of its rows.
    """
    num = n * sxy - sx * sy
    den = n * sxx - sx * sx
    return F.when(den != 0, num.cast("double") / den.cast("double") * 60_000.0)


def _mean(total: Column, n: Column) -> Column:
    """An exact sum over its count: a sum of integers (as a double, exact below 2**53) or of decimals
    (lag in seconds to the ms), so a mean merged from partial sums is the one of the rows themselves."""
    return F.when(n > 0, total / n).cast("double")


def _rate(offsets: Column, dt_ms: Column) -> Column:
    span_s = dt_ms / 1000.0
    return F.when(span_s > 0, offsets / span_s)


def _buckets(windows: dict[str, int], at: str, ranges: dict[str, tuple[int, int]] | None = None) -> Column:
    """One (window, bucket_start) row per window, or per window whose kept buckets (ranges) hold `at`."""
    buckets = []
    for name, width in windows.items():
        start = _bucket(at, width)
        if ranges is not None:  # dropped before exploding: most rows of a day are only in its 1d bucket
            first, last = ranges.get(name, (1, 0))
            start = F.when(start.between(first, last), start)
        buckets.append(F.struct(F.lit(name).alias("window"), start.alias("bucket_start")))
    return F.explode(F.filter(F.array(*buckets), lambda b: b["bucket_start"].isNotNull()))


def _sums(origin: str) -> list[Column]:
    """What a bucket's statistics are computed from, over sample totals, with x counted from `origin`."""
    x = F.when(F.col("lag").isNotNull(), F.col("taken_at") - F.col(origin)).cast(EXACT)
    y = F.col("lag").cast(EXACT)
    return [
        F.count("*").alias("samples"),
        F.count("lag").alias("lag_n"),
        F.sum("lag").alias("lag_sum"),
        F.max("lag").alias("lag_max"),
        F.max("taken_at").alias("last_at"),
        F.max_by("lag", "taken_at").alias("lag_last"),
        F.sum(x).alias("sx"),
        F.sum(y).alias("sy"),
        F.sum(x * y).alias("sxy"),
        F.sum(x * x).alias("sxx"),
        F.sum("d_log_end").alias("d_log_end"),
        F.sum("dt_log_end").alias("dt_log_end"),
        F.sum("d_committed").alias("d_committed"),
        F.sum("dt_committed").alias("dt_committed"),
        F.count("lag_seconds").alias("ls_n"),
        F.sum(F.col("lag_seconds").cast(MS)).alias("ls_sum"),
        F.max("lag_seconds").alias("ls_max"),
        F.max("bounded").alias("bounded"),
    ]


def compute_lag_partials(sample_totals: DataFrame) -> DataFrame:
    """Per (cluster, group, topic, 5-minute bucket), the sums, extremes and KLL sketches that the 1h and 1d
    buckets merge (merge_lag_partials). A run stores those of its new samples only: partials of different
    runs hold different samples, so a wide bucket is the merge of all its partials, without rereading its rows."""
    keys = ["cluster", "group_id", "topic", "bucket_start"]
    start = _bucket("taken_at", PARTIAL_MS)
    return (
        sample_totals.withColumn("bucket_start", start)
        .groupBy(*keys)
        .agg(
            *_sums("bucket_start"),
            F.kll_sketch_agg_bigint("lag", SKETCH_K).alias("lag_sketch"),
            F.kll_sketch_agg_double("lag_seconds", SKETCH_K).alias("ls_sketch"),
        )
    )


def merge_lag_partials(
    partials: DataFrame, windows: dict[str, int], ranges: dict[str, tuple[int, int]] | None = None
) -> DataFrame:
    """Lag statistics of buckets made of whole 5-minute partials (compute_lag_partials): exact but for
    the percentiles, from the merged sketches (approximate once a bucket holds over SKETCH_K values)."""
    exploded = (
        partials.withColumnRenamed("bucket_start", "part_start")
        .withColumn("_b", _buckets(windows, "part_start", ranges))
        .select("*", "_b.*")
        .drop("_b")
    )
    d = (F.col("part_start") - F.col("bucket_start")).cast(EXACT)  # shifts each partial's x to the bucket's start
    n = F.col("lag_n").cast(EXACT)
    merged = exploded.groupBy("cluster", "group_id", "topic", "window", "bucket_start").agg(
        F.sum("samples").alias("samples"),
        F.sum("lag_n").alias("lag_n"),
        F.sum("lag_sum").alias("lag_sum"),
        F.max("lag_max").alias("lag_max"),
        F.max("last_at").alias("last_at"),
        F.max_by("lag_last", "last_at").alias("lag_last"),
        F.sum(F.col("sx") + n * d).alias("sx"),
        F.sum("sy").alias("sy"),
        F.sum(F.col("sxy") + d * F.col("sy")).alias("sxy"),
        F.sum(F.col("sxx") + 2 * d * F.col("sx") + n * d * d).alias("sxx"),
        *[F.sum(c).alias(c) for c in ("d_log_end", "dt_log_end", "d_committed", "dt_committed", "ls_n", "ls_sum")],
        F.max("ls_max").alias("ls_max"),
        F.max("bounded").alias("bounded"),
        F.kll_merge_agg_bigint("lag_sketch").alias("lag_sketch"),
        F.kll_merge_agg_double("ls_sketch").alias("ls_sketch"),
    )
    ls_pct = F.kll_sketch_get_quantile_double("ls_sketch", F.array(F.lit(0.5), F.lit(0.95)))
    return merged.select(
        "*",
        F.when(F.col("lag_n") > 0, F.kll_sketch_get_quantile_bigint("lag_sketch", F.lit(0.95)))
        .cast("double")
        .alias("lag_p95"),
        F.when(F.col("ls_n") > 0, ls_pct).alias("_ls_pct"),
    ).drop("lag_sketch", "ls_sketch")


def compute_exact_trends(
    sample_totals: DataFrame, windows: dict[str, int], ranges: dict[str, tuple[int, int]] | None = None
) -> DataFrame:
    """Lag statistics of buckets computed from their sample totals, percentiles exact."""
    exploded = sample_totals.withColumn("_b", _buckets(windows, "taken_at", ranges)).select("*", "_b.*").drop("_b")
    return exploded.groupBy("cluster", "group_id", "topic", "window", "bucket_start").agg(
        *_sums("bucket_start"),
        F.percentile("lag", 0.95).alias("lag_p95"),
        F.percentile("lag_seconds", F.array(F.lit(0.5), F.lit(0.95))).alias("_ls_pct"),  # one pass for both
    )


def compute_lag_trends(
    sample_totals: DataFrame,
    windows: dict[str, int] = LAG_WINDOWS,
    ranges: dict[str, tuple[int, int]] | None = None,
    partials: DataFrame | None = None,
) -> DataFrame:
    """Lag statistics per (cluster, group, topic, window, bucket), from compute_sample_totals.

    With `partials` (an incremental run's, stored run by run), windows wider than 5 minutes merge
    them (merge_lag_partials: percentiles from KLL sketches) and only the 1m and 5m buckets aggregate
    the totals; without (a recompute, the oracle), every bucket aggregates the totals, percentiles
    exact. ranges (window -> first and last bucket_start) keeps only those buckets, before
    aggregating: an incremental run computes only the buckets new samples touched.

    slope: least squares of lag over time (offsets/min; > 0 falling behind), see _slope_per_min.
    ETA: lag at the bucket's last sample / (consume - produce) when that is
    positive; 0 when there is no lag; None with catching_up False otherwise.
    """
    wide = {} if partials is None else {name: width for name, width in windows.items() if width > PARTIAL_MS}
    exact = {name: width for name, width in windows.items() if name not in wide}
    parts = [compute_exact_trends(sample_totals, exact, ranges)] if exact else []
    if wide:
        parts.append(merge_lag_partials(partials, wide, ranges))
    return finish_trends(functools.reduce(DataFrame.unionByName, parts))


def finish_trends(sums: DataFrame) -> DataFrame:
    """lag_trends rows from the per-bucket sums of compute_exact_trends or merge_lag_partials (one formula each)."""
    n = F.col("lag_n").cast(EXACT)
    trends = sums.select(
        "cluster",
        "group_id",
        "topic",
        "window",
        "bucket_start",
        "samples",
        _mean(F.col("lag_sum").cast("double"), F.col("lag_n")).alias("lag_avg"),
        "lag_max",
        "lag_p95",
        "lag_last",
        _slope_per_min(n, F.col("sx"), F.col("sy"), F.col("sxy"), F.col("sxx")).alias("lag_slope_per_min"),
        _rate(F.col("d_log_end"), F.col("dt_log_end")).alias("produce_rate"),
        _rate(F.col("d_committed"), F.col("dt_committed")).alias("consume_rate"),
        _mean(F.col("ls_sum"), F.col("ls_n")).alias("lag_seconds_avg"),
        F.col("ls_max").alias("lag_seconds_max"),
        F.col("_ls_pct")[0].alias("lag_seconds_p50"),
        F.col("_ls_pct")[1].alias("lag_seconds_p95"),
        (F.coalesce(F.col("bounded"), F.lit(0)) == 1).alias("lag_seconds_bounded"),
    )
    net = F.col("consume_rate") - F.col("produce_rate")
    eta = F.when(F.col("lag_last") == 0, F.lit(0.0)).when(net > 0, F.col("lag_last") / net)
    catching = (
        F.when(F.col("lag_last").isNull(), F.lit(None).cast("boolean"))
        .when(F.col("lag_last") == 0, F.lit(True))
        .otherwise(F.coalesce(net > 0, F.lit(False)))
    )
    return trends.withColumn("catch_up_eta_s", eta.cast("double")).withColumn("catching_up", catching)


# -- rebalances ------------------------------------------------------------------------


def prepare_rebalances(rebalances: DataFrame) -> DataFrame:
    """Parse the stored JSON member lists and add duration_ms (None while in progress)."""
    return (
        rebalances.withColumn(
            "joined", F.coalesce(F.from_json("members_joined", MEMBER_REFS), F.array().cast(MEMBER_REFS))
        )
        .withColumn("left", F.coalesce(F.from_json("members_left", MEMBER_REFS), F.array().cast(MEMBER_REFS)))
        .withColumn("duration_ms", F.col("ended_at") - F.col("started_at"))
    )


def compute_rebalance_stats(rebalances: DataFrame, windows: dict[str, int] = REBALANCE_WINDOWS) -> DataFrame:
    """Per group, window and bucket (by start time): how often, how long, how much moved, and who.

    Durations count completed rebalances only (stop-the-world time for eager
    groups). top_* name the members,
    hosts and client ids that joined or left in most rebalances of the bucket
    (JSON [{"name": ..., "rebalances": n}, ...], most first).
    """
    keys = ["cluster", "group_id", "window", "bucket_start"]
    rb = (
        prepare_rebalances(rebalances)
        .withColumn("_b", _buckets(windows, "started_at"))
        .select("*", "_b.*")
        .drop("_b")
        .withColumn("_id", F.monotonically_increasing_id())
    )
    stats = rb.groupBy(*keys).agg(
        F.mode("protocol", deterministic=True).alias("protocol"),
        F.count("*").alias("rebalances"),
        F.count("duration_ms").alias("completed"),
        F.sum("duration_ms").alias("total_duration_ms"),
        F.avg("duration_ms").alias("mean_duration_ms"),
        F.percentile("duration_ms", 0.95).alias("p95_duration_ms"),
        F.max("duration_ms").alias("max_duration_ms"),
        F.sum("partitions_moved").alias("partitions_moved"),
        F.sum(F.size("joined")).alias("members_joined"),
        F.sum(F.size("left")).alias("members_left"),
    )
    # One pass over "who": (kind, name) per rebalance -> in how many rebalances of the bucket.
    named = lambda kind, name: F.struct(F.lit(kind).alias("kind"), name.alias("name"))  # noqa: E731
    who = rb.select(
        *keys,
        "_id",
        F.explode(
            F.concat(
                F.array(named("triggers", F.col("trigger"))),
                F.transform(F.concat("joined", "left"), lambda m: named("top_members", m["member_id"])),
                F.transform(F.concat("joined", "left"), lambda m: named("top_hosts", m["host"])),
                F.transform(F.concat("joined", "left"), lambda m: named("top_clients", m["client_id"])),
            )
        ).alias("w"),
    ).where(F.col("w.name").isNotNull() & (F.col("w.name") != ""))
    counted = who.groupBy(*keys, "w.kind", "w.name").agg(F.countDistinct("_id").alias("n"))
    rank = Window.partitionBy(*keys, "kind").orderBy(F.col("n").desc(), F.col("name"))
    counted = counted.withColumn("_rank", F.row_number().over(rank)).where(
        (F.col("_rank") <= TOP_N) | (F.col("kind") == "triggers")
    )
    items = F.sort_array(F.collect_list(F.struct("kind", "_rank", "name", "n")))

    def of(kind: str) -> Column:
        return F.filter(items, lambda s: s["kind"] == kind)

    lists = counted.groupBy(*keys).agg(
        F.to_json(F.map_from_entries(F.transform(of("triggers"), lambda s: F.struct(s["name"], s["n"])))).alias(
            "triggers"
        ),
        *[
            F.to_json(
                F.transform(of(kind), lambda s: F.struct(s["name"].alias("name"), s["n"].alias("rebalances")))
            ).alias(kind)
            for kind in ("top_members", "top_hosts", "top_clients")
        ],
    )
    return stats.join(lists, keys, "left")


def compute_stability_ranking(rebalances: DataFrame, start: int, end: int) -> DataFrame:
    """The least stable groups of each cluster over [start, end): most rebalances first, then longest."""
    hours = (end - start) / 3_600_000
    rb = prepare_rebalances(rebalances).where((F.col("started_at") >= start) & (F.col("started_at") < end))
    per_group = rb.groupBy("cluster", "group_id").agg(
        F.count("*").alias("rebalances"),
        F.coalesce(F.sum("duration_ms"), F.lit(0)).cast("long").alias("total_duration_ms"),
        F.avg("duration_ms").alias("mean_duration_ms"),
        F.sum("partitions_moved").alias("partitions_moved"),
        F.mode("protocol", deterministic=True).alias("protocol"),
    )
    order = Window.partitionBy("cluster").orderBy(
        F.col("rebalances").desc(), F.col("total_duration_ms").desc(), F.col("group_id")
    )
    return (
        per_group.withColumn("rank", F.row_number().over(order))
        .withColumn("per_hour", F.col("rebalances") / F.lit(hours))
        .withColumn("window_start", F.lit(start).cast("long"))
        .withColumn("window_end", F.lit(end).cast("long"))
    )


def compute_protocol_comparison(rebalances: DataFrame, start: int, end: int) -> DataFrame:
    """Eager vs cooperative vs consumer (KIP-848): how often and how long, per cluster over [start, end)."""
    rb = prepare_rebalances(rebalances).where((F.col("started_at") >= start) & (F.col("started_at") < end))
    return (
        rb.groupBy("cluster", "protocol")
        .agg(
            F.countDistinct("group_id").alias("groups"),
            F.count("*").alias("rebalances"),
            F.avg("duration_ms").alias("mean_duration_ms"),
            F.percentile("duration_ms", 0.95).alias("p95_duration_ms"),
            F.avg("partitions_moved").alias("mean_partitions_moved"),
        )
        .withColumn("per_group", F.col("rebalances") / F.col("groups"))
        .withColumn("window_start", F.lit(start).cast("long"))
        .withColumn("window_end", F.lit(end).cast("long"))
    )


# -- the whole trend computation ------------------------------------------------------------


def compute_trends_from_history(
    group_offsets: DataFrame, partition_offsets: DataFrame, windows: dict[str, int] = LAG_WINDOWS
) -> DataFrame:
    """History -> lag_trends rows (all buckets present in the input)."""
    return compute_lag_trends(compute_sample_totals(compute_partition_rows(group_offsets, partition_offsets)), windows)
