"""Scaling out as docs/production.md "Scaling out" writes it, every part real.

PostgreSQL holds the store (Debian's server, a new database); two collector shards
start together on it while the mixed workload runs on the session's broker; a
Spark standalone master and worker come from the pyspark package's own
`spark-class` (loopback, 1 core, 1 GiB); `spark-submit --master spark://...`
analyses the store with the PostgreSQL JDBC driver (Debian's
libpostgresql-jdbc-java). Then, as a user checks it: the tasks ran on the worker,
the results equal a local run on a copy of the same data, and the CLI and the
dashboard show every group once.

What does not depend on each other runs at once: the Spark cluster starts while the
workload runs, and the local run analyses its copy while the cluster analyses the store.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from harness import wait_for
from spark_cluster import BIN, read_json, spark_cluster, started

from monitor.shard import Shard

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]
PG_JAR = "/usr/share/java/postgresql.jar"
RESULT_TABLES = ("lag_trends", "rebalance_stats", "rebalance_ranking", "rebalance_protocols")
WORKLOAD_S = 20  # seconds of workload after the groups settled


def result_rows(url: str) -> dict[str, list[tuple]]:
    """Every analysis result row, without the run id (each database numbers its own runs)."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            tables = {}
            for name in RESULT_TABLES:
                rows = conn.execute(sa.text(f"SELECT * FROM {name}")).mappings().all()
                tables[name] = sorted(tuple(v for k, v in row.items() if k != "run_id") for row in rows)
            return tables
    finally:
        engine.dispose()


def newest_sample_of_each_shard(url: str) -> dict[str, int]:
    """shard ("i/n") -> when its newest stored cycle was taken."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return dict(conn.execute(sa.text("SELECT shard, MAX(taken_at) FROM samples GROUP BY shard")).all())
    finally:
        engine.dispose()


def settled(truth: Path) -> bool:
    """Whether the sim says its groups have settled and both Streams instances have been RUNNING (under load
    they can take longer than the sim waits for its groups to settle: 48 s in a CI run)."""
    events = list(map(json.loads, truth.read_text().split("\n")[:-1] if truth.exists() else []))  # whole lines
    running = {e["client_id"] for e in events if e["event"] == "state" and e["after"] == "RUNNING"}
    return len(running) == 2 and any(e["event"] == "phase" and e.get("name") == "settled" for e in events)


def executors_of_tasks(events: Path) -> list[str]:
    """The executor of every finished task, from the Spark event log."""
    ids = []
    for log in events.iterdir():
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event["Event"] == "SparkListenerTaskEnd":
                ids.append(event["Task Info"]["Executor ID"])
    return ids


def test_shards_on_postgresql_and_a_spark_cluster_analyse_as_one_local_run(
    kafka, postgres, unique, tmp_path, monkeypatch
):
    url = postgres.new_database()
    env = {
        **os.environ,
        "LAGMON_DATABASE_URL": url,
        "LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap,
        "LAGMON_CLUSTER_NAME": "scale",
        "LAGMON_GROUP_ALLOW": f".*-{unique}-.*",
        "LAGMON_OFFSETS_TOPIC": "on",
    }
    collect = [sys.executable, "-m", "monitor", "collect", "--interval", "1s", "--shard"]
    truth = tmp_path / "truth.jsonl"
    events = tmp_path / "events"
    events.mkdir()
    analyze_env = {**env, "PYSPARK_PYTHON": sys.executable, "LAGMON_HISTORY_DIR": str(tmp_path / "history")}
    with (
        started(
            [
                sys.executable,
                "-m",
                "monitor",
                "sim",
                "mixed",
                "--bootstrap",
                kafka.bootstrap,
                "--suffix",
                unique,
                "--truth",
                truth,
            ],
            env,
            tmp_path / "sim.log",
        ) as sim,
        started([*collect, "1/2"], env, tmp_path / "shard-1.log") as one,
        started([*collect, "2/2"], env, tmp_path / "shard-2.log") as two,
        spark_cluster(tmp_path) as (master, status),  # starts while the workload runs
    ):
        # the workload runs WORKLOAD_S once every group has settled: in a CI run the Streams instances reached
        # RUNNING 48 s after the sim started (the Spark cluster starting beside them), past a fixed 30 s workload
        wait_for(lambda: settled(truth), 150, "the sim's groups to settle, every Streams instance running")
        time.sleep(WORKLOAD_S)
        sim.send_signal(signal.SIGTERM)
        assert sim.wait(60) == 0, (tmp_path / "sim.log").read_text()[-3000:]
        ended = int(time.time() * 1000)
        wait_for(  # the shards sample the workload's end
            lambda: (
                (newest := newest_sample_of_each_shard(url)).keys() == {"1/2", "2/2"} and min(newest.values()) > ended
            ),
            60,
            "a cycle of each shard taken after the workload ended, stored",
        )
        for shard in (one, two):
            assert shard.poll() is None, "a shard ended early (both started together on a new database)"
            shard.send_signal(signal.SIGTERM)
        assert [one.wait(30), two.wait(30)] == [0, 0]
        logs = {n: (tmp_path / f"shard-{n}.log").read_text() for n in (1, 2)}
        assert all("partitions in" in log for log in logs.values()), logs  # each shard completed cycles

        copy = postgres.new_database(copy_of=url)  # the same data for the local run
        with (tmp_path / "local.log").open("w") as out:
            local = subprocess.Popen(  # meanwhile: the cluster's worker has one core, the machine more
                [sys.executable, "-m", "monitor", "analyze", "--once"],
                cwd=ROOT,
                env={
                    **analyze_env,
                    "LAGMON_DATABASE_URL": copy,
                    "LAGMON_SPARK_MASTER": "local[2]",
                    "LAGMON_HISTORY_DIR": str(tmp_path / "local"),
                },
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            submitted = subprocess.run(
                [
                    BIN / "spark-submit",
                    "--master",
                    master,
                    "--jars",
                    PG_JAR,
                    "--driver-class-path",
                    PG_JAR,
                    "--conf",
                    "spark.eventLog.enabled=true",
                    "--conf",
                    f"spark.eventLog.dir=file://{events}",
                    "--conf",
                    "spark.eventLog.compress=false",
                    "--conf",
                    "spark.eventLog.rolling.enabled=false",
                    "spark/main.py",
                    "--once",
                ],
                cwd=ROOT,
                env=analyze_env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert submitted.returncode == 0, submitted.stdout[-3000:] + submitted.stderr[-3000:]
            assert [app["name"] for app in read_json(status)["completedapps"]] == ["lagmon-analyze"]
            assert local.wait(600) == 0, (tmp_path / "local.log").read_text()[-3000:]
        finally:
            if local.poll() is None:
                local.kill()
                local.wait()
    executors = executors_of_tasks(events)
    assert executors and "driver" not in executors  # every task ran on the worker's executor

    on_cluster = result_rows(url)
    assert on_cluster["lag_trends"] and on_cluster["rebalance_stats"]
    assert on_cluster == result_rows(copy)

    groups = json.loads(
        subprocess.run(
            [sys.executable, "-m", "monitor", "groups", "--json"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    )
    names = [g["GROUP"] for g in groups]
    classic = {f"sim-{s}-{unique}-group" for s in ("steady", "lagging", "churn", "kip848", "stalled")}
    kafka4 = {f"sim-{s}-{unique}-group" for s in ("share", "streams")}  # from the shards' offsets-topic tails
    assert len(names) == len(set(names)) and set(names) == classic | kafka4, names
    assert {Shard(1, 2).owns(n) for n in names} == {True, False}  # both shards had groups to write

    from dashboard_seed import open_app

    monkeypatch.setenv("LAGMON_DATABASE_URL", url)
    overview = open_app(page="overview", range="1h").dataframe[0].value
    assert sorted(overview["group"]) == sorted(names)
