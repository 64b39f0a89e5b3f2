"""The one line docs/configuration.md promises for a bad Spark setting, from `python -m monitor analyze` as a
user runs it: no traceback, exit code 2. Also when the value passes the settings but Java refuses it (a
stand-in `java` that fails as a JVM does on -Xmx0), so no real JVM starts here."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from harness import log_messages

ROOT = Path(__file__).resolve().parents[2]


def analyze(tmp_path: Path, *options: str, **env: str) -> subprocess.CompletedProcess:
    """`analyze` with these options (default --once) in a clean environment but for `env`."""
    db = tmp_path / "lagmon.db"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LAGMON_")}
    base = {"LAGMON_DATABASE_URL": f"sqlite:///{db}", "LAGMON_HISTORY_DIR": str(tmp_path / "history")}
    return subprocess.run(
        [sys.executable, "-m", "monitor", "analyze", *(options or ["--once"])],
        cwd=ROOT,  # this checkout's monitor/, whatever the venv's editable install points at
        env={**clean, **base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def error_lines(done: subprocess.CompletedProcess) -> list[str]:
    """The messages of the ERROR log lines on stderr."""
    return log_messages(done.stderr, "ERROR")


@pytest.mark.parametrize(
    "variable, value, message",
    [
        ("LAGMON_SPARK_UI", "maybe", "LAGMON_SPARK_UI: 'maybe' is not on (1, true, yes, on) or off"),
        ("LAGMON_SPARK_DRIVER_MEMORY", "lots", "LAGMON_SPARK_DRIVER_MEMORY: 'lots' is not a Spark memory"),
        ("LAGMON_SPARK_DRIVER_MEMORY", "0", "LAGMON_SPARK_DRIVER_MEMORY: '0' is not a Spark memory size"),
        ("LAGMON_SPARK_DRIVER_MEMORY", "100k", "LAGMON_SPARK_DRIVER_MEMORY: '100k' is too small"),
    ],
)
def test_a_bad_spark_setting_is_one_line_and_no_traceback(tmp_path, variable, value, message):
    done = analyze(tmp_path, **{variable: value})
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1  # the error line and nothing else
    assert len(error_lines(done)) == 1 and error_lines(done)[0].startswith(message)


def test_the_spark_ui_takes_true_as_an_sre_writes_it(tmp_path):
    done = analyze(tmp_path, LAGMON_SPARK_UI="true", LAGMON_DATABASE_URL=f"sqlite:///{tmp_path / 'none' / 'x.db'}")
    assert "LAGMON_SPARK_UI" not in done.stderr
    assert error_lines(done) == [
        f"no database at {tmp_path / 'none' / 'x.db'}: run `python -m monitor "
        "collect` first (or set LAGMON_DATABASE_URL)"
    ]  # got past the settings


def upgraded_store(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "monitor", "db", "upgrade"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        env={**os.environ, "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'lagmon.db'}"},
    )


def failing_java(tmp_path: Path) -> Path:
    """A stand-in JAVA_HOME whose java writes its arguments to java-args, then fails as a JVM does on -Xmx0."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    fail = 'echo "Invalid maximum heap size: -Xmx0" >&2\nexit 1\n'
    java.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/java-args\n{fail}')
    java.chmod(0o755)
    return java.parents[1]


def test_a_driver_jvm_that_does_not_start_is_one_line_after_javas_own(tmp_path):
    upgraded_store(tmp_path)
    done = analyze(tmp_path, JAVA_HOME=str(failing_java(tmp_path)), LAGMON_SPARK_DRIVER_MEMORY="3g")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "Invalid maximum heap size: -Xmx0" in done.stderr
    assert error_lines(done) == [
        "Spark's driver JVM did not start (JAVA_GATEWAY_EXITED; Java's own message is above): check java "
        "(PATH or JAVA_HOME) and the heap it was given, 3g (LAGMON_SPARK_DRIVER_MEMORY)"
    ]


@pytest.mark.parametrize(
    "options, compiler",
    [(["--once"], "quick"), (["--once", "--since=-1d"], "optimising"), (["--every", "1m"], "optimising")],
)
def test_on_auto_the_driver_jvm_gets_the_quick_compiler_only_for_one_small_run(tmp_path, options, compiler):
    upgraded_store(tmp_path)  # nothing stored: no rows ahead
    done = analyze(tmp_path, *options, JAVA_HOME=str(failing_java(tmp_path)))
    assert done.returncode == 2, done.stderr
    assert f"driver JVM: {compiler} compiler (0 rows not yet analysed)" in log_messages(done.stderr, "INFO")
    java_args = (tmp_path / "java-args").read_text()
    assert ("-XX:TieredStopAtLevel=1" in java_args) == (compiler == "quick")
    assert ("-XX:CompileThresholdScaling=4" in java_args) == (compiler == "optimising")


@pytest.mark.parametrize("history_kept, ahead", [(True, 0), (False, 12)])
def test_rows_ahead_count_the_whole_store_again_when_the_history_is_gone(tmp_path, history_kept, ahead):
    """Analysed up to sample 3; without its history folder the next run reads every stored row again."""
    upgraded_store(tmp_path)
    db = sqlite3.connect(tmp_path / "lagmon.db")
    with db:
        db.executemany("INSERT INTO topic_partitions VALUES (?, 'c', 't', ?)", [(1, 0), (2, 1)])
        db.execute("INSERT INTO consumer_groups (id, cluster, group_id, first_seen_at) VALUES (1, 'c', 'g', 0)")
        db.executemany("INSERT INTO group_partitions (id, group_ref, tp_id) VALUES (?, 1, ?)", [(1, 1), (2, 2)])
        for sample in (1, 2, 3):
            db.execute(
                "INSERT INTO samples (id, cluster, taken_at, duration_ms, groups, partitions, ok, resolution_ms) "
                "VALUES (?, 'c', ?, 1, 1, 2, 1, 0)",
                (sample, sample * 10_000),
            )
            db.executemany("INSERT INTO partition_samples VALUES (?, ?, 0, 100, 0)", [(sample, 1), (sample, 2)])
            db.executemany("INSERT INTO offset_samples VALUES (?, ?, 90)", [(sample, 1), (sample, 2)])
        db.execute(
            "INSERT INTO analysis_runs (started_at, finished_at, status, watermark, rows_read, rows_written, "
            "duration_ms, master) VALUES (0, 1, 'ok', 3, 12, 0, 1, 'local[2]')"
        )
    db.close()
    if history_kept:
        (tmp_path / "history").mkdir()
    done = analyze(tmp_path, JAVA_HOME=str(failing_java(tmp_path)))
    assert f"driver JVM: quick compiler ({ahead} rows not yet analysed)" in log_messages(done.stderr, "INFO")
