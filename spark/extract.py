"""Extract: new store rows through JDBC into a Parquet history; windows read back from it.

Incremental and exactly-once without a second system to agree with: each run
reads the samples with id in (watermark, hi] and appends them as one batch,
laid out `<history>/<dataset>/day=YYYY-MM-DD/batch=<hi>/`. The watermark is the
newest 'ok' analysis_runs row, written in the same transaction as the results
(spark.load), so a batch newer than it belongs to a run that failed: the next
run deletes it before reading again, and readers ignore it meanwhile. Long
windows read Parquet (pruned by day), never SQLite again.

JDBC maps SQLite BIGINT to decimal(20,0): every read declares its schema
(customSchema) and the frames are cast to the history's types.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sqlalchemy.engine import Engine, make_url

from monitor.models import ConfigError
from monitor.store.schema import offset_samples, partition_samples, rebalances, samples

GROUP_OFFSETS = "group_offsets"
PARTITION_OFFSETS = "partition_offsets"

GROUP_OFFSETS_SCHEMA = (
    "cluster STRING, group_id STRING, topic STRING, partition INT, sample_id INT, taken_at BIGINT, committed BIGINT"
)
PARTITION_OFFSETS_SCHEMA = (
    "cluster STRING, topic STRING, partition INT, sample_id INT, taken_at BIGINT, log_start BIGINT, log_end BIGINT"
)
REBALANCES_SCHEMA = (
    "cluster STRING, group_id STRING, started_at BIGINT, ended_at BIGINT, protocol STRING, "
    "trigger STRING, members_before INT, members_after INT, members_joined STRING, "
    "members_left STRING, partitions_moved INT"
)
HISTORY_SCHEMAS = {GROUP_OFFSETS: GROUP_OFFSETS_SCHEMA, PARTITION_OFFSETS: PARTITION_OFFSETS_SCHEMA}
# Derived, not read from the store: spark.transforms.compute_sample_totals of each batch's samples, so the
# trend buckets of a day aggregate ~10x fewer rows than the raw offsets and never redo the time-lag sweep.
SAMPLE_TOTALS = "sample_totals"
SAMPLE_TOTALS_SCHEMA = (
    "cluster STRING, group_id STRING, topic STRING, taken_at BIGINT, lag BIGINT, "
    "lag_seconds DOUBLE, bounded INT, d_log_end BIGINT, d_committed BIGINT, dt_log_end BIGINT, "
    "dt_committed BIGINT"
)
# Derived too: spark.transforms.compute_lag_partials of each batch's totals, per 5-minute bucket, which the
# 1h and 1d trend buckets merge instead of rereading their totals (a day's bucket: its whole day, every run).
LAG_PARTIALS = "lag_partials"
LAG_PARTIALS_SCHEMA = (
    "cluster STRING, group_id STRING, topic STRING, bucket_start BIGINT, samples BIGINT, lag_n BIGINT, "
    "lag_sum BIGINT, lag_max BIGINT, last_at BIGINT, lag_last BIGINT, sx DECIMAL(38,0), sy DECIMAL(38,0), "
    "sxy DECIMAL(38,0), sxx DECIMAL(38,0), d_log_end BIGINT, dt_log_end BIGINT, d_committed BIGINT, "
    "dt_committed BIGINT, ls_n BIGINT, ls_sum DECIMAL(38,3), ls_max DOUBLE, bounded INT, lag_sketch BINARY, "
    "ls_sketch BINARY"
)
# Derived too: spark.transforms.compute_log_end_index of each batch's log ends, per topic-partition and
# 5 minutes, where a run finds the few buckets of points its time lag needs (hours of them, if a consumer is).
LOG_END_INDEX = "log_end_index"
LOG_END_INDEX_SCHEMA = (
    "cluster STRING, topic STRING, partition INT, bucket_start BIGINT, top BIGINT, last_at BIGINT, last_sample INT"
)
DATASET_SCHEMAS = {
    **HISTORY_SCHEMAS,
    SAMPLE_TOTALS: SAMPLE_TOTALS_SCHEMA,
    LAG_PARTIALS: LAG_PARTIALS_SCHEMA,
    LOG_END_INDEX: LOG_END_INDEX_SCHEMA,
}
# what places a row in its day (taken_at for the others)
_TIME_COLUMNS = {LAG_PARTIALS: "bucket_start", LOG_END_INDEX: "bucket_start"}


@dataclass(frozen=True)
class _Source:
    """Where a dataset comes from: the fact rows (ints only: the bulk of the read) and the names they refer
    to (a small dimension table, joined in Spark by broadcast on large reads: 3x faster than SQLite joining per
    row; small reads are joined by the store, see STORE_JOINS_UP_TO)."""

    facts: str  # formatted with lo, hi: the rows of samples (lo, hi]
    facts_schema: str
    names: str
    names_schema: str
    key: str


_SOURCES = {
    GROUP_OFFSETS: _Source(
        "SELECT sample_id, gp_id, committed FROM offset_samples WHERE sample_id > {lo} AND sample_id <= {hi}",
        "sample_id INT, gp_id INT, committed BIGINT",
        """SELECT gp.id AS gp_id, cg.cluster AS cluster, cg.group_id AS group_id, tp.topic AS topic,
        tp.partition AS partition FROM group_partitions gp JOIN consumer_groups cg ON cg.id = gp.group_ref
        JOIN topic_partitions tp ON tp.id = gp.tp_id""",
        "gp_id INT, cluster STRING, group_id STRING, topic STRING, partition INT",
        "gp_id",
    ),
    PARTITION_OFFSETS: _Source(
        "SELECT sample_id, tp_id, log_start, log_end FROM partition_samples "
        "WHERE sample_id > {lo} AND sample_id <= {hi}",
        "sample_id INT, tp_id INT, log_start BIGINT, log_end BIGINT",
        "SELECT id AS tp_id, cluster, topic, partition FROM topic_partitions",
        "tp_id INT, cluster STRING, topic STRING, partition INT",
        "tp_id",
    ),
}
_SAMPLE_TIMES = "SELECT id AS sample_id, taken_at FROM samples WHERE id > {lo} AND id <= {hi}"
MIN_SAMPLES_PER_JDBC_PARTITION = 50  # below that, one connection beats the per-partition start-up
# fact rows: up to here, SQLite's join beats two broadcasts (a Spark job each); warm, on 2 cores: 50,000 rows
# 0.23 s against 0.48, 200,000 0.71 against 0.84, 1,000,000 3.1 against 2.3
STORE_JOINS_UP_TO = 200_000


@dataclass(frozen=True)
class Jdbc:
    """Where and how Spark reads the store (secrets stay out of repr)."""

    url: str
    driver: str
    user: str | None = None
    password: str | None = None

    def __repr__(self) -> str:
        return f"Jdbc({self.url!r}, {self.driver!r})"

    def options(self) -> dict[str, str]:
        opts = {"url": self.url, "driver": self.driver}
        if self.user:
            opts["user"] = self.user
        if self.password:
            opts["password"] = self.password
        return opts


def build_jdbc(database_url: str) -> Jdbc:
    """LAGMON_DATABASE_URL (SQLAlchemy form) -> the JDBC equivalent (SQLite file or PostgreSQL)."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        if not url.database or url.database == ":memory:":
            raise ConfigError("analyze needs a database file (an in-memory SQLite cannot be shared with Spark)")
        from pathlib import Path

        return Jdbc(f"jdbc:sqlite:{Path(url.database).resolve()}", "org.sqlite.JDBC")
    if url.get_backend_name() == "postgresql":
        port = f":{url.port}" if url.port else ""
        return Jdbc(
            f"jdbc:postgresql://{url.host or 'localhost'}{port}/{url.database}",
            "org.postgresql.Driver",
            url.username,
            url.password,
        )
    raise ConfigError(f"analyze supports SQLite and PostgreSQL stores, not {url.get_backend_name()}")


def check_driver(spark: SparkSession, jdbc: Jdbc, jar: str, submitted: bool) -> None:
    """A missing JDBC driver is one clear line at start, not a Java stack trace in the first read."""
    from py4j.protocol import Py4JJavaError

    jvm = spark.sparkContext._jvm
    try:
        jvm.java.lang.Class.forName(jdbc.driver, False, jvm.java.lang.Thread.currentThread().getContextClassLoader())
    except Py4JJavaError as e:
        if e.java_exception.getClass().getName() != "java.lang.ClassNotFoundException":
            raise
        how = (
            f"give spark-submit `--jars {jar} --driver-class-path {jar}` before spark/main.py"
            if submitted
            else f"install it ({jar}) or name its jar in LAGMON_SPARK_JDBC_JARS"
        )
        raise ConfigError(f"Spark has no JDBC driver {jdbc.driver} for the store: {how}") from None


# -- the store side (SQLAlchemy, small queries) -------------------------------------------


def read_new_samples(engine: Engine, watermark: int) -> tuple[int, int | None, int | None]:
    """(newest sample id, oldest and newest taken_at after the watermark); the id bounds this run's read."""
    with engine.connect() as conn:
        hi = conn.execute(sa.select(sa.func.max(samples.c.id))).scalar() or watermark
        lo_at, hi_at = conn.execute(
            sa.select(sa.func.min(samples.c.taken_at), sa.func.max(samples.c.taken_at)).where(
                samples.c.id > watermark, samples.c.id <= hi
            )
        ).one()
    return max(hi, watermark), lo_at, hi_at


def read_row_count(engine: Engine, dataset: str, lo: int, hi: int) -> int:
    """Rows of samples (lo, hi] in a dataset's fact table: a range scan of its clustered key."""
    table = {GROUP_OFFSETS: offset_samples, PARTITION_OFFSETS: partition_samples}[dataset]
    with engine.connect() as conn:
        return conn.execute(
            sa.select(sa.func.count()).select_from(table).where(table.c.sample_id > lo, table.c.sample_id <= hi)
        ).scalar()


def read_rows_ahead(engine: Engine, watermark: int) -> int:
    """Rows of the fact tables after the watermark: what the next run extracts (no Spark needed)."""
    hi, _, _ = read_new_samples(engine, watermark)
    return sum(read_row_count(engine, dataset, watermark, hi) for dataset in HISTORY_SCHEMAS)


def read_rebalance_count(engine: Engine, since: int, until: int) -> int:
    """Rebalances that started in [since, until], as read_rebalances reads them (sizes their step, no Spark job)."""
    with engine.connect() as conn:
        return conn.execute(
            sa.select(sa.func.count())
            .select_from(rebalances)
            .where(rebalances.c.started_at >= since, rebalances.c.started_at <= until)
        ).scalar()


# -- JDBC -> Parquet ---------------------------------------------------------------------------


def extract_batch(spark: SparkSession, jdbc: Jdbc, dataset: str, lo: int, hi: int, rows: int) -> DataFrame:
    """The `rows` rows of samples (lo, hi] of one dataset: a few, joined by the store in one read; more, facts
    read in parallel by sample id ranges (one per core) and joined in Spark."""
    source = _SOURCES[dataset]
    bounds = {"lo": int(lo), "hi": int(hi)}
    if rows <= STORE_JOINS_UP_TO:
        key = f"{source.key} INT, "
        query = (
            f"SELECT * FROM ({source.facts.format(**bounds)}) f JOIN ({_SAMPLE_TIMES.format(**bounds)}) t "
            f"USING (sample_id) JOIN ({source.names}) n USING ({source.key})"
        )
        schema = f"{source.facts_schema}, taken_at BIGINT, {source.names_schema.replace(key, '')}"
        return cast_to(_read_jdbc(spark, jdbc, query, schema), HISTORY_SCHEMAS[dataset])
    partitions = max(1, min(spark.sparkContext.defaultParallelism, (hi - lo) // MIN_SAMPLES_PER_JDBC_PARTITION))
    by_sample = (
        {
            "partitionColumn": "sample_id",
            "lowerBound": str(lo + 1),
            "upperBound": str(hi + 1),
            "numPartitions": str(partitions),
        }
        if partitions > 1
        else {}
    )
    facts = _read_jdbc(spark, jdbc, source.facts.format(**bounds), source.facts_schema, **by_sample)
    times = _read_jdbc(spark, jdbc, _SAMPLE_TIMES.format(**bounds), "sample_id INT, taken_at BIGINT")
    names = _read_jdbc(spark, jdbc, source.names, source.names_schema)
    rows = facts.join(F.broadcast(times), "sample_id").join(F.broadcast(names), source.key)
    return cast_to(rows, HISTORY_SCHEMAS[dataset])


def _read_jdbc(spark: SparkSession, jdbc: Jdbc, query: str, schema: str, **options: str) -> DataFrame:
    return (
        spark.read.format("jdbc")
        .options(**jdbc.options())
        .options(dbtable=f"({query}) AS q", customSchema=schema, fetchsize="10000", **options)
        .load()
    )


def read_rebalances(spark: SparkSession, jdbc: Jdbc, since: int, until: int) -> DataFrame:
    """Rebalances that started in [since, until]: a small table, re-read for the buckets being recomputed."""
    columns = ", ".join(c.split()[0] for c in REBALANCES_SCHEMA.split(", "))
    query = f"SELECT {columns} FROM rebalances WHERE started_at >= {int(since)} AND started_at <= {int(until)}"
    return cast_to(_read_jdbc(spark, jdbc, query, REBALANCES_SCHEMA), REBALANCES_SCHEMA)


def cast_to(df: DataFrame, ddl: str) -> DataFrame:
    """Select and cast exactly the columns of a DDL schema string (JDBC's decimals become longs)."""
    cols = [c.strip().split() for c in ddl.split(",")]
    return df.select(*[F.col(name).cast(kind.lower()).alias(name) for name, kind in cols])


def _time_column(dataset: str) -> str:
    return _TIME_COLUMNS.get(dataset, "taken_at")


def write_batch(df: DataFrame, history_dir: str, dataset: str, hi: int) -> None:
    """Append one batch to the history, partitioned by day then batch (= the run's newest sample id).

    Each file's rows in time order (the store's already are; derived datasets come out of a hash
    aggregation): Parquet's page statistics then let a read of an hour skip the rest of a day's file.
    """
    at = _time_column(dataset)
    df = df.withColumn("day", F.date_format(F.timestamp_millis(at), "yyyy-MM-dd")).withColumn("batch", F.lit(int(hi)))
    if dataset not in HISTORY_SCHEMAS:  # with the folders' columns first, or the writer sorts again by those alone
        df = df.sortWithinPartitions("day", "batch", at)
    df.write.mode("append").partitionBy("day", "batch").parquet(f"{history_dir}/{dataset}")


def discard_uncommitted(spark: SparkSession, history_dir: str, watermark: int, since: int | None = None) -> int:
    """Delete batches newer than the watermark (left by a failed run); how many were deleted.

    `since`: the oldest sample newer than the watermark. A failed run's batches hold such samples
    only, so only their days are looked at (None: every day).
    """
    jvm = spark._jvm
    fs = jvm.org.apache.hadoop.fs.Path(history_dir).getFileSystem(spark._jsc.hadoopConfiguration())
    first = "" if since is None else utc_day(since)
    deleted = 0
    for dataset in DATASET_SCHEMAS:
        for day in _day_folders(spark, f"{history_dir}/{dataset}", first, "9999-12-31"):
            for status in fs.listStatus(jvm.org.apache.hadoop.fs.Path(day)):
                name = status.getPath().getName()
                if name.startswith("batch=") and int(name.split("=", 1)[1]) > watermark:
                    fs.delete(status.getPath(), True)
                    deleted += 1
    return deleted


def history_exists(spark: SparkSession, history_dir: str) -> bool:
    """Whether every dataset of the history is there (a new or wiped LAGMON_HISTORY_DIR is not)."""
    conf = spark._jsc.hadoopConfiguration()
    for dataset in DATASET_SCHEMAS:
        path = spark._jvm.org.apache.hadoop.fs.Path(f"{history_dir}/{dataset}")
        if not path.getFileSystem(conf).exists(path):
            return False
    return True


def read_history(
    spark: SparkSession, history_dir: str, dataset: str, since: int, until: int, up_to_batch: int
) -> DataFrame:
    """A dataset's rows with taken_at (a partial's bucket_start) in [since, until] from committed batches.

    Only the day folders of the range are handed to Spark: it lists every folder under the paths
    it is given, and a month of `--every 5m` runs is 8,640 batch folders per dataset (listing them
    all made a small incremental run take 17.6 s instead of 5.1: bench/bench_analyze_small.py).
    """
    schema = f"{DATASET_SCHEMAS[dataset]}, day STRING, batch INT"
    path = f"{history_dir}/{dataset}"
    days = _day_folders(spark, path, utc_day(since), utc_day(until))
    if not days:
        return spark.createDataFrame([], DATASET_SCHEMAS[dataset])
    df = (
        spark.read.schema(schema)
        .option("basePath", path)
        .parquet(*days)
        .where(F.col("batch") <= up_to_batch)
        .where(F.col(_time_column(dataset)).between(since, until))
    )
    return df.drop("day", "batch")


def utc_day(ms: int) -> str:
    return datetime.fromtimestamp(max(ms, 0) / 1000, UTC).strftime("%Y-%m-%d")


def _day_folders(spark: SparkSession, path: str, first: str, last: str) -> list[str]:
    """The dataset's day=YYYY-MM-DD folders from `first` to `last` (one listing of the dataset's folder)."""
    hpath = spark._jvm.org.apache.hadoop.fs.Path(path)
    fs = hpath.getFileSystem(spark._jsc.hadoopConfiguration())
    if not fs.exists(hpath):
        return []
    names = [status.getPath().getName() for status in fs.listStatus(hpath) if status.isDirectory()]
    return [f"{path}/{name}" for name in sorted(names) if name.startswith("day=") and first <= name[4:] <= last]
