"""The only SparkSession builder: local by default, any master unchanged.

`python -m monitor analyze` and `spark-submit` both hand it the SparkSettings
(monitor.config) loaded by spark/main.py: the master (default
local[*]; under spark-submit its --master unless one is set), the web UI, the
driver memory (local mode's one JVM does all the work: Spark's 1g default makes
its sorts spill to disk; we take a quarter of the RAM, 1 to 4g; a heap of at most 1g
collects with the serial collector), its compilers (the quick one only for one small
run, else both with thresholds x4), the class archive
that `make setup` writes (spark/class_archive.py), if there is one. The JDBC driver
(default Debian's jar for the store's database) is put on the driver's and
executors' class path. Under spark-submit the driver JVM runs already: the jars,
driver class path and memory are its options (--jars, --driver-class-path,
--driver-memory), and lagmon sets none of them. Driver host 127.0.0.1 only in
local mode: a cluster must reach the driver by its real address.
"""

from __future__ import annotations

import os

from monitor import jvm
from monitor.config import SparkSettings
from monitor.config.parse import memory_mib
from monitor.models import LagmonError
from spark.sizing import OFFSETS_PER_PARTITION

SQLITE_JDBC_JAR = "/usr/share/java/sqlite-jdbc.jar"  # Debian's libxerial-sqlite-jdbc-java
POSTGRESQL_JDBC_JAR = "/usr/share/java/postgresql.jar"  # Debian's libpostgresql-jdbc-java
DEFAULT_MASTER = "local[*]"
# A driver heap of at most 1g (the default on a machine of up to 7 GiB) collects with the serial collector: there
# G1's remembered sets and concurrent threads cost more than they save (bench_analyze_small, 1g heap: the JVM's peak
# RSS 621-622 MiB against 728-806, 8.7-8.8 CPU-s per 20 s cycle against 9.7-10.3, warm runs no slower).
SMALL_HEAP_MIB, SMALL_HEAP_GC = 1024, "-XX:+UseSerialGC"
# With both compilers, every compile threshold x4: fewer of a small run's methods reach the optimising compiler, whose
# threads then take less of a 2-core machine; a big run's hot loops still get there at once. Beside a live collector
# (bench_analyze_small.py --live --runs 8, three pairs, 2026-11-29): 16.9-17.4 CPU-s to the first run's end against
# 20.4, 4.5-5.1 CPU-s per 20 s cycle against 5.3-6.0, warm runs no slower; a full run over 1 M rows 28.4 s against 27.7.
COMPILE_LATER = "-XX:CompileThresholdScaling=4"
# The quick compiler alone reserves 48 MB for compiled code, both compilers 240 MB. A driver that runs many queries
# on it (the test suite's, a long `--every`) filled the 48 and its next query failed: "Out of space in CodeCache for
# adapters" (2026-11-30). Reserved, not resident: its pages are used as code is compiled.
QUICK_JIT = f"{jvm.QUICK_JIT} -XX:ReservedCodeCacheSize=240m"


def default_driver_memory(ram_bytes: int | None = None) -> str:
    """A quarter of the machine's RAM, between 1 and 4 GiB (more stopped paying off in bench/bench_spark.py)."""
    if ram_bytes is None:
        ram_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return f"{max(1, min(4, ram_bytes // 4 // 2**30))}g"


def resolve_quick_jit(setting: bool | None, rows_ahead: int, recompute: bool, repeating: bool) -> bool:
    """The quick compiler's setting, or on auto whether one small run is ahead: `--once` with at most a
    partition of rows not yet analysed, and no recompute. Such a JVM ends before the optimising compiler pays
    back (a cold `--once` on a small store ended ~3 s sooner). An `--every` JVM keeps both compilers: its warm
    runs get faster as the optimising compiler catches up; so does a big run (docs/architecture.md §8)."""
    if setting is not None:
        return setting
    return not repeating and not recompute and rows_ahead <= OFFSETS_PER_PARTITION


def under_spark_submit(env: dict[str, str] | None = None) -> bool:
    """Whether spark-submit started this Python (it hands it a gateway port): its JVM runs already."""
    return "PYSPARK_GATEWAY_PORT" in (os.environ if env is None else env)


def jdbc_jar(settings: SparkSettings, database_url: str) -> str:
    """The jars named in the settings, else Debian's JDBC driver for the store's database."""
    if settings.jdbc_jars:
        return settings.jdbc_jars
    return POSTGRESQL_JDBC_JAR if database_url.startswith("postgresql") else SQLITE_JDBC_JAR


def build_session_config(
    settings: SparkSettings, database_url: str, submitted: bool, java_options: str | None = None
) -> dict[str, str]:
    """The Spark settings lagmon wants, as plain strings (pure, for tests and the builder).

    java_options: the driver JVM's own (spark.class_archive's), for a JVM lagmon starts.
    """
    master = settings.master or (None if submitted else DEFAULT_MASTER)
    conf = {
        "spark.app.name": "lagmon-analyze",
        "spark.ui.enabled": "true" if settings.ui else "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",  # lagmon prints its own stages
        "spark.sql.shuffle.partitions": str(settings.shuffle_partitions),
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.sql.adaptive.enabled": "true",
        # PySpark's DataFrame debugging: every Column and DataFrame method would send its Python call site to
        # the JVM first, ~10 round trips each, half of a small warm run's ~11,000 (docs/architecture.md §8).
        # Errors keep their Python traceback.
        "spark.python.sql.dataFrameDebugging.enabled": "false",
    }
    if not submitted:  # spark-submit has started the driver JVM already, with its own --jars and --driver-*
        conf["spark.jars"] = conf["spark.driver.extraClassPath"] = jdbc_jar(settings, database_url)
        conf["spark.driver.memory"] = memory = settings.driver_memory or default_driver_memory()
        small_heap = memory_mib(memory) <= SMALL_HEAP_MIB
        compilers = QUICK_JIT if settings.driver_quick_jit else COMPILE_LATER
        options = " ".join(o for o in (java_options, SMALL_HEAP_GC if small_heap else None, compilers) if o)
        conf["spark.driver.extraJavaOptions"] = options
    if master is not None:
        conf["spark.master"] = master
    if master is not None and master.startswith("local"):
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
    return conf


def build_session(settings: SparkSettings, database_url: str, extra: dict[str, str] | None = None):
    """A SparkSession (getOrCreate: spark-submit's own session is reused) with quiet logs."""
    from pyspark.sql import SparkSession

    from spark.class_archive import java_options

    submitted = under_spark_submit()
    options = None if submitted else java_options(jdbc_jar(settings, database_url))
    conf = {**build_session_config(settings, database_url, submitted, options), **(extra or {})}
    _start_jvm_apart(conf)
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(settings.log_level)
    return spark


def _start_jvm_apart(settings: dict[str, str]) -> None:
    """The driver JVM, started as PySpark starts it but in a process group of its own.

    A SIGTERM to lagmon's process group (GNU timeout sends one after the one to lagmon) would
    kill the JVM under a running `analyze`, which then fails to stop its session. Apart, the JVM
    stops when lagmon stops the session, or when lagmon's process ends (it watches its stdin).
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.errors import PySparkRuntimeError
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is None and not under_spark_submit():  # spark-submit's JVM is its own
        conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
        try:
            gateway = launch_gateway(conf, popen_kwargs={"start_new_session": True})
        except PySparkRuntimeError as e:  # the JVM's own reason is on stderr above this line
            raise LagmonError(
                f"Spark's driver JVM did not start ({e.getCondition()}; Java's own message is above): check java "
                f"(PATH or JAVA_HOME) and the heap it was given, {settings.get('spark.driver.memory')} "
                f"(LAGMON_SPARK_DRIVER_MEMORY)"
            ) from None
        SparkContext._ensure_initialized(gateway=gateway)
