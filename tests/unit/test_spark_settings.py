"""The Spark job's pure pieces: session settings and which buckets a run recomputes (no Spark needed)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from monitor.config import SparkSettings
from monitor.models import ConfigError
from spark.class_archive import archive_path
from spark.extract import build_jdbc
from spark.main import bucket_ranges, compute_range, history_location
from spark.session import (
    COMPILE_LATER,
    SQLITE_JDBC_JAR,
    build_session_config,
    default_driver_memory,
    resolve_quick_jit,
)
from spark.sizing import OFFSETS_PER_PARTITION, compiled, shuffle_plan

H = 3_600_000
SQLITE = "sqlite:///lagmon.db"


def config(env: dict[str, str], url: str = SQLITE, submitted: bool = False) -> dict[str, str]:
    return build_session_config(SparkSettings.from_env(env), url, submitted)


def test_local_by_default_with_the_sqlite_driver_and_no_ui():
    conf = config({})
    assert conf["spark.master"] == "local[*]"
    assert conf["spark.jars"] == conf["spark.driver.extraClassPath"] == SQLITE_JDBC_JAR
    assert conf["spark.ui.enabled"] == "false"
    assert conf["spark.driver.host"] == "127.0.0.1"
    assert conf["spark.sql.shuffle.partitions"] == "8"


def test_a_cluster_master_keeps_the_real_driver_address():
    conf = config({"LAGMON_SPARK_MASTER": "spark://10.0.0.5:7077", "LAGMON_SPARK_UI": "1"})
    assert conf["spark.master"] == "spark://10.0.0.5:7077"
    assert "spark.driver.host" not in conf and "spark.driver.bindAddress" not in conf
    assert conf["spark.ui.enabled"] == "true"


def test_spark_submit_master_wins_unless_lagmon_names_one():
    assert "spark.master" not in config({}, submitted=True)
    assert config({"LAGMON_SPARK_MASTER": "local[2]"}, submitted=True)["spark.master"] == "local[2]"


def test_driver_memory_is_a_quarter_of_the_ram_within_1_to_4g_unless_set():
    assert [default_driver_memory(gib * 2**30) for gib in (2, 8, 12, 24, 256)] == ["1g", "2g", "3g", "4g", "4g"]
    assert config({"LAGMON_SPARK_DRIVER_MEMORY": "6g"})["spark.driver.memory"] == "6g"
    assert "spark.driver.memory" not in config({}, submitted=True)


def test_spark_submit_jars_are_its_own():  # set after the driver JVM started, they would reach the executors only
    submitted = config({"LAGMON_SPARK_JDBC_JARS": "/j/pg.jar"}, submitted=True)
    assert "spark.jars" not in submitted and "spark.driver.extraClassPath" not in submitted
    local = config({"LAGMON_SPARK_JDBC_JARS": "/j/pg.jar"})
    assert local["spark.jars"] == local["spark.driver.extraClassPath"] == "/j/pg.jar"


def test_the_jdbc_driver_follows_the_store_unless_set():
    jar = lambda env, url: config(env, url)["spark.jars"]  # noqa: E731
    assert jar({}, SQLITE) == jar({}, "sqlite:///x.db") == "/usr/share/java/sqlite-jdbc.jar"
    assert jar({}, "postgresql+psycopg://u@db/lagmon") == "/usr/share/java/postgresql.jar"
    assert jar({"LAGMON_SPARK_JDBC_JARS": "/j/x.jar"}, "postgresql://db/x") == "/j/x.jar"


@pytest.mark.parametrize(
    "variable, value, message",
    [
        ("LAGMON_SPARK_UI", "maybe", "LAGMON_SPARK_UI: 'maybe' is not on (1, true, yes, on) or off (0, false"),
        ("LAGMON_SPARK_SHUFFLE_PARTITIONS", "0", "LAGMON_SPARK_SHUFFLE_PARTITIONS: 0 is not from 1 to 10000"),
        ("LAGMON_SPARK_DRIVER_MEMORY", "lots", "LAGMON_SPARK_DRIVER_MEMORY: 'lots' is not a Spark memory size"),
        # what -Xmx would refuse, or Spark under its 450 MiB: each a traceback from the JVM's launch before
        ("LAGMON_SPARK_DRIVER_MEMORY", "2gb", "LAGMON_SPARK_DRIVER_MEMORY: '2gb' is not a Spark memory size"),
        ("LAGMON_SPARK_DRIVER_MEMORY", "1p", "LAGMON_SPARK_DRIVER_MEMORY: '1p' is not a Spark memory size"),
        ("LAGMON_SPARK_DRIVER_MEMORY", "2048", "LAGMON_SPARK_DRIVER_MEMORY: '2048' is not a Spark memory size"),
        ("LAGMON_SPARK_DRIVER_MEMORY", "0", "LAGMON_SPARK_DRIVER_MEMORY: '0' is not a Spark memory size"),
        ("LAGMON_SPARK_DRIVER_MEMORY", "0g", "LAGMON_SPARK_DRIVER_MEMORY: '0g' is too small: Spark's driver needs"),
        ("LAGMON_SPARK_DRIVER_MEMORY", "100k", "LAGMON_SPARK_DRIVER_MEMORY: '100k' is too small"),
        ("LAGMON_SPARK_DRIVER_MEMORY", "511m", "LAGMON_SPARK_DRIVER_MEMORY: '511m' is too small"),
        ("LAGMON_SPARK_LOG_LEVEL", "loud", "LAGMON_SPARK_LOG_LEVEL: 'loud' is not one of ALL, DEBUG"),
    ],
)
def test_a_bad_spark_setting_names_the_variable(variable, value, message):
    with pytest.raises(ConfigError) as info:
        SparkSettings.from_env({variable: value})
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("text, on", [("true", True), ("1", True), ("On", True), ("false", False), ("0", False)])
def test_the_spark_ui_takes_true_and_false(text, on):
    assert config({"LAGMON_SPARK_UI": text})["spark.ui.enabled"] == ("true" if on else "false")


@pytest.mark.parametrize("text", ["512m", "512M", "2g", "2G", "1t", "524288k"])
def test_a_driver_memory_the_jvm_takes_is_passed_on_as_written(text):
    assert config({"LAGMON_SPARK_DRIVER_MEMORY": text})["spark.driver.memory"] == text


def test_history_dir_is_absolute_locally_and_untouched_as_a_uri(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert history_location(SparkSettings.from_env({}).history_dir) == str(tmp_path / ".lagmon" / "history")
    assert history_location("s3a://bucket/lagmon") == "s3a://bucket/lagmon"


@pytest.mark.parametrize(
    "new_from, new_to, since, until, expected",
    [
        (100, 900, None, None, (100, 900)),  # the new samples' span
        (None, None, None, None, None),  # nothing new, nothing asked: nothing to do
        (100, 900, 0, None, (0, 900)),  # --since alone: up to the newest sample
        (None, None, None, 5 * H, (5 * H - 24 * H, 5 * H)),  # --until alone: the day before it
    ],
)
def test_the_range_a_run_recomputes(new_from, new_to, since, until, expected):
    assert compute_range(new_from, new_to, since, until, now=10 * H) == expected


def test_since_after_until_is_one_clear_error():
    with pytest.raises(ConfigError, match="--since is after --until"):
        compute_range(None, None, 2 * H, H, now=10 * H)


def test_buckets_overlapping_a_range_are_recomputed_whole():
    ranges = bucket_ranges({"1m": 60_000, "1h": H}, start=H + 90_000, end=2 * H + 30_000)
    assert ranges == {"1m": (H + 60_000, 2 * H), "1h": (H, 2 * H)}
    assert bucket_ranges({"1h": H}, start=H + 10, end=H + 20, slack=H) == {"1h": (0, H)}


def test_jdbc_urls_for_sqlite_and_postgres_keep_the_password_out_of_repr(tmp_path):
    assert build_jdbc(f"sqlite:///{tmp_path}/x.db").url == f"jdbc:sqlite:{tmp_path}/x.db"
    pg = build_jdbc("postgresql+psycopg://lagmon:s3cret@db.example:5433/lagmon")
    assert (pg.url, pg.driver, pg.user, pg.password) == (
        "jdbc:postgresql://db.example:5433/lagmon",
        "org.postgresql.Driver",
        "lagmon",
        "s3cret",
    )
    assert "s3cret" not in repr(pg)
    with pytest.raises(ConfigError):
        build_jdbc("sqlite://")


@pytest.mark.parametrize(
    ("size", "plan"),
    [
        (0, (1, False)),
        (90_000, (1, False)),
        (100_000, (1, False)),
        (100_001, (2, True)),
        (350_000, (4, True)),
        (10**9, (8, True)),
    ],
)
def test_a_step_gets_a_partition_per_share_of_its_data_and_adaptive_execution_only_when_split(size, plan):
    assert shuffle_plan(size, per_partition=100_000, most=8) == plan


def test_a_split_step_gets_a_multiple_of_the_cores_up_to_the_most():
    assert [shuffle_plan(size, 100_000, most=8, cores=2)[0] for size in (100_000, 250_000, 350_000, 750_000)] == [
        1,
        4,
        4,
        8,
    ]
    assert shuffle_plan(10**9, 100_000, most=7, cores=2) == (7, True)


def test_a_step_runs_generated_code_from_an_eighth_of_a_partition_on():
    assert [compiled(size, 800_000) for size in (0, 5_000, 99_999, 100_000, 288_000, 10**9)] == [
        False,
        False,
        False,
        True,
        True,
        True,
    ]


def test_the_class_archive_goes_to_a_driver_jvm_lagmon_starts_not_to_spark_submits():
    options, settings = "-XX:SharedArchiveFile=/x.jsa", SparkSettings.from_env({"LAGMON_SPARK_DRIVER_MEMORY": "4g"})
    assert build_session_config(settings, SQLITE, False, options)["spark.driver.extraJavaOptions"].split() == [
        options,
        COMPILE_LATER,
    ]
    assert "spark.driver.extraJavaOptions" not in build_session_config(settings, SQLITE, True, options)
    no_archive = config({"LAGMON_SPARK_DRIVER_MEMORY": "4g"})
    assert no_archive["spark.driver.extraJavaOptions"] == COMPILE_LATER  # the JVM starts without one


@pytest.mark.parametrize(
    ("memory", "serial"), [("512m", True), ("1g", True), ("1024m", True), ("1025m", False), ("4g", False)]
)
def test_a_driver_heap_of_at_most_1g_collects_with_the_serial_collector(memory, serial):
    settings = SparkSettings.from_env({"LAGMON_SPARK_DRIVER_MEMORY": memory})
    options = build_session_config(settings, SQLITE, False, "-XX:SharedArchiveFile=/x.jsa")
    assert options["spark.driver.extraJavaOptions"].split() == ["-XX:SharedArchiveFile=/x.jsa"] + (
        ["-XX:+UseSerialGC"] if serial else []
    ) + [COMPILE_LATER]
    assert "spark.driver.extraJavaOptions" not in build_session_config(settings, SQLITE, True, None)  # spark-submit's


def test_the_quick_compiler_is_asked_for_by_its_setting_and_only_for_a_driver_jvm_lagmon_starts():
    env = {"LAGMON_SPARK_DRIVER_MEMORY": "4g", "LAGMON_SPARK_DRIVER_QUICK_JIT": "on"}
    quick = ["-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=240m"]  # both compilers' code cache
    assert config(env)["spark.driver.extraJavaOptions"].split() == quick
    archive = "-XX:SharedArchiveFile=/x.jsa"
    archived = build_session_config(SparkSettings.from_env(env), SQLITE, False, archive)
    assert archived["spark.driver.extraJavaOptions"].split() == [archive, *quick]
    assert "spark.driver.extraJavaOptions" not in config(env, submitted=True)  # spark-submit's
    both = config({"LAGMON_SPARK_DRIVER_MEMORY": "4g", "LAGMON_SPARK_DRIVER_QUICK_JIT": "off"})
    assert both["spark.driver.extraJavaOptions"] == "-XX:CompileThresholdScaling=4"  # both compilers, thresholds x4
    assert config({"LAGMON_SPARK_DRIVER_MEMORY": "4g"}) == both  # undecided (auto outside run()): both


@pytest.mark.parametrize(
    "text, setting", [("", None), ("auto", None), ("AUTO", None), ("on", True), ("1", True), ("off", False)]
)
def test_the_quick_compiler_setting_is_auto_on_or_off(text, setting):
    assert SparkSettings.from_env({"LAGMON_SPARK_DRIVER_QUICK_JIT": text}).driver_quick_jit is setting


def test_a_quick_compiler_setting_that_is_neither_is_refused():
    with pytest.raises(ConfigError, match="LAGMON_SPARK_DRIVER_QUICK_JIT: 'sometimes' is not auto, on"):
        SparkSettings.from_env({"LAGMON_SPARK_DRIVER_QUICK_JIT": "sometimes"})


@pytest.mark.parametrize(
    "setting, rows_ahead, recompute, repeating, quick",
    [
        (None, 0, False, False, True),
        (None, OFFSETS_PER_PARTITION, False, False, True),
        (None, OFFSETS_PER_PARTITION + 1, False, False, False),  # a first run over a big store: optimised code pays
        (None, 10, True, False, False),  # --since/--until recompute whole days
        (None, 10, False, True, False),  # --every: its warm runs get faster with the optimising compiler
        (True, 10**9, True, True, True),  # a setting wins
        (False, 0, False, False, False),
    ],
)
def test_on_auto_the_quick_compiler_is_for_one_small_run(setting, rows_ahead, recompute, repeating, quick):
    assert resolve_quick_jit(setting, rows_ahead, recompute, repeating) is quick


def test_a_class_archive_belongs_to_one_jdbc_jar_and_a_changed_jar_needs_a_new_one(tmp_path):
    jar = tmp_path / "driver.jar"
    jar.write_bytes(b"v1")
    first = archive_path(str(jar))
    assert archive_path(str(jar)) == first
    assert first.parent == Path(sys.prefix) / "share" / "lagmon"
    assert archive_path(SQLITE_JDBC_JAR) != first
    jar.write_bytes(b"v2, longer")
    assert archive_path(str(jar)) != first


@pytest.mark.parametrize("memory, quick", [("1g", "off"), ("4g", "off"), ("4g", "on")])
def test_the_installed_java_starts_with_the_options_lagmon_gives_a_driver_and_room_for_its_code(memory, quick):
    """The tests' own drivers run on the quick compiler: this is where the default options meet a real JVM. On the
    quick compiler alone Java reserves 48 MB for compiled code, which the test suite's driver filled."""
    env = {"LAGMON_SPARK_DRIVER_MEMORY": memory, "LAGMON_SPARK_DRIVER_QUICK_JIT": quick}
    options = build_session_config(SparkSettings.from_env(env), SQLITE, False)["spark.driver.extraJavaOptions"].split()
    done = subprocess.run(
        [shutil.which("java"), *options, "-XX:+PrintFlagsFinal", "-version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    [cache] = [line.split()[3] for line in done.stdout.splitlines() if " ReservedCodeCacheSize " in line]
    assert int(cache) == 240 * 2**20
