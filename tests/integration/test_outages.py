"""The collector outlives what it watches: its worker crashing in native code, PostgreSQL restarted,
SQLite locked by another process, the disk full.

Each test runs the real `collect` (its supervisor, worker, tail, alerts and sender) at a 1 s
interval on one group that holds a steady lag, with a lag rule that fires at once to a real
HTTP hook. While the store is away the cycles are kept in memory; once it is back they are
written in order, and the alert neither fires again nor resolves (docs/production.md, "When
things break").
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import pg_server
import psutil
import pytest
import sqlalchemy as sa
from harness import chat_hook, chat_messages, log_messages, running, wait_for
from kafka_setup import commit_without_joining, create_topic, produce
from pytest_httpserver import HTTPServer

from monitor.store import make_engine

RULES = """
rules:
  - {name: behind, kind: lag_offsets, above: 10, severity: warning}
"""
INTERVAL_S = 1.0


def lagging_group(bootstrap: str, unique: str) -> str:
    """A group 50 offsets behind on two partitions, and staying there (it never consumes)."""
    topic, group = f"outage-{unique}", f"outage-{unique}-group"
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, {0: 30, 1: 30})
    commit_without_joining(bootstrap, group, {(topic, 0): 5, (topic, 1): 5})
    return group


def collector_env(bootstrap: str, db_url: str, group: str, tmp_path: Path, httpserver) -> dict[str, str]:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    return {
        **os.environ,
        "LAGMON_BOOTSTRAP_SERVERS": bootstrap,
        "LAGMON_DATABASE_URL": db_url,
        "LAGMON_GROUP_ALLOW": f"^{group}$",
        "LAGMON_ALERTS_FILE": str(rules),
        "LAGMON_CHANNELS": f"hook={chat_hook(httpserver)}",
    }


def collect(env: dict[str, str], log: Path, *options: str):
    return running([sys.executable, "-m", "monitor", "collect", "--interval", f"{INTERVAL_S:g}s", *options], env, log)


def column(db_url: str, sql: str) -> list:
    """The one column `sql` selects, read in a connection of its own."""
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            return [value for (value,) in conn.exec_driver_sql(sql)]
    finally:
        engine.dispose()


def sample_times(db_url: str) -> list[int]:
    """When each stored cycle was taken, oldest first."""
    return column(db_url, "SELECT taken_at FROM samples WHERE ok ORDER BY taken_at")


def newest_sample_at(db_url: str) -> int:
    try:
        return max(sample_times(db_url), default=0)
    except sa.exc.OperationalError:  # still away, or locked
        return 0


def messages(httpserver) -> list[str]:
    """'FIRING' / 'RESOLVED' ... of each message that reached the hook."""
    return [m["title"].split(" [")[0].split()[-1] for m in chat_messages(httpserver)]


def now_ms() -> int:
    return int(time.time() * 1000)


def check_the_outage(db_url: str, log: Path, httpserver, away: tuple[int, int]) -> None:
    """What every outage must leave: cycles taken meanwhile stored, one message in all, said once each way."""
    start, end = away
    during = [t for t in sample_times(db_url) if start + 2000 < t < end - 1000]
    # a cycle a second while the store was away (give or take the retries), all written afterwards
    assert len(during) >= (end - start - 3000) / 1000 * 0.6, (len(during), end - start)
    assert messages(httpserver) == ["FIRING"]
    said = log_messages(log.read_text())
    assert sum(m.startswith("store unavailable:") for m in said) == 1, said
    assert sum(m.startswith("store back after") for m in said) == 1, said
    assert not any("worker" in m and "starting it again" in m for m in said), said
    # and the Health page's "Recent errors" has it, at its start
    [marker] = [e for e in failed_sample_errors(db_url) if "the store was unavailable" in e]
    assert "cycles kept and written afterwards" in marker


def test_a_postgresql_restart_loses_no_cycle_and_sends_nothing_twice(kafka, postgres, unique, tmp_path, httpserver):
    group = lagging_group(kafka.bootstrap, unique)
    db_url = postgres.new_database()
    log = tmp_path / "collect.log"
    with collect(collector_env(kafka.bootstrap, db_url, group, tmp_path, httpserver), log) as proc:
        wait_for(lambda: messages(httpserver) == ["FIRING"], 60, "the lag alert to fire")
        pg_server.pause(postgres)
        away = now_ms()
        time.sleep(20)
        pg_server.resume(postgres)
        back = now_ms()
        wait_for(lambda: newest_sample_at(db_url) > back, 15, "a cycle taken after PostgreSQL came back, stored")
        time.sleep(3 * INTERVAL_S)  # room for a wrong second message
        assert proc.poll() is None, log.read_text()
    check_the_outage(db_url, log, httpserver, (away, back))


def test_sqlite_locked_by_another_process_for_15s(kafka, unique, tmp_path, httpserver):
    group = lagging_group(kafka.bootstrap, unique)
    db_path = tmp_path / "locked.db"
    db_url = f"sqlite:///{db_path}"
    log = tmp_path / "collect.log"
    with collect(collector_env(kafka.bootstrap, db_url, group, tmp_path, httpserver), log) as proc:
        wait_for(lambda: messages(httpserver) == ["FIRING"], 60, "the lag alert to fire")
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD_LOCK, str(db_path), "15"], stdout=subprocess.PIPE, text=True
        )
        assert holder.stdout.readline().strip() == "locked"
        away = now_ms()
        assert holder.wait(30) == 0
        back = now_ms()
        wait_for(lambda: newest_sample_at(db_url) > back, 15, "a cycle taken after the lock was let go, stored")
        time.sleep(3 * INTERVAL_S)
        assert proc.poll() is None, log.read_text()
    check_the_outage(db_url, log, httpserver, (away, back))


HOLD_LOCK = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("ROLLBACK")
"""


@pytest.fixture
def small_disk(tmp_path):
    """A 16 MB file system of its own (tmpfs; the tests run as root, as CI does)."""
    if os.geteuid() != 0:
        pytest.fail("the full-disk test mounts a tmpfs: run the tests as root (CI does)")
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


def test_a_full_disk_and_space_coming_back(kafka, unique, tmp_path, httpserver, small_disk):
    group = lagging_group(kafka.bootstrap, unique)
    db_url = f"sqlite:///{small_disk / 'full.db'}"
    log = tmp_path / "collect.log"
    filler = small_disk / "filler"
    with collect(collector_env(kafka.bootstrap, db_url, group, tmp_path, httpserver), log) as proc:
        wait_for(lambda: messages(httpserver) == ["FIRING"], 60, "the lag alert to fire")
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True)  # until full
        away = now_ms()
        wait_for(lambda: "store unavailable" in log.read_text(), 20, "the collector to find the disk full")
        time.sleep(10)
        filler.unlink()
        back = now_ms()
        wait_for(lambda: newest_sample_at(db_url) > back, 15, "a cycle taken after space came back, stored")
        time.sleep(3 * INTERVAL_S)
        assert proc.poll() is None, log.read_text()
    check_the_outage(db_url, log, httpserver, (away, back))


def workers(supervisor: subprocess.Popen) -> list[psutil.Process]:
    """The supervisor's live workers (a crashed one is a zombie until the supervisor reaps it)."""
    out = []
    for p in psutil.Process(supervisor.pid).children():
        with contextlib.suppress(psutil.ZombieProcess, psutil.NoSuchProcess):
            if "--worker" in p.cmdline():
                out.append(p)
    return out


def bare_interpreter_rss() -> int:
    """Resident bytes of this interpreter started with nothing imported (site's imports aside)."""
    said = subprocess.run(
        [sys.executable, "-c", "import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(said.stdout) * 1024


def failed_sample_errors(db_url: str) -> list[str]:
    return column(db_url, "SELECT errors FROM samples WHERE NOT ok")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metric(port: int, name: str) -> float | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
    return None


def test_a_worker_that_crashes_in_native_code_is_started_again_and_the_alert_holds(kafka, unique, tmp_path, httpserver):
    group = lagging_group(kafka.bootstrap, unique)
    db_url = f"sqlite:///{tmp_path / 'crash.db'}"
    log, port = tmp_path / "collect.log", free_port()
    env = collector_env(kafka.bootstrap, db_url, group, tmp_path, httpserver)
    with collect(env, log, "--metrics-port", str(port)) as proc:
        wait_for(lambda: messages(httpserver) == ["FIRING"], 60, "the lag alert to fire")
        [first] = workers(proc)
        supervisor = psutil.Process(proc.pid)  # `collect` became the lean supervisor: same pid, few imports
        assert supervisor.cmdline()[1:3] == ["-m", "monitor.supervisor"]
        assert supervisor.memory_info().rss < bare_interpreter_rss() + 6 * 2**20  # the whole CLI was +12 MB
        first.send_signal(signal.SIGSEGV)  # what librdkafka's crash does to the process
        crashed = now_ms()
        second = wait_for(lambda: [w for w in workers(proc) if w.pid != first.pid], 20, "a new worker")[0]
        wait_for(lambda: newest_sample_at(db_url) > crashed, 20, "a cycle of the new worker, stored")
        wait_for(lambda: metric(port, "lagmon_collector_restarts_total") == 1, 10, "the restart on /metrics")
        time.sleep(3 * INTERVAL_S)  # room for a wrong second message
        assert messages(httpserver) == ["FIRING"]
        assert any("died of SIGSEGV" in e for e in failed_sample_errors(db_url))
        said = log_messages(log.read_text(), "ERROR")
        assert [m for m in said if "worker" in m] == [
            next(m for m in said if m.startswith("the collector's worker died of SIGSEGV (a crash in native code)"))
        ]
        proc.send_signal(signal.SIGKILL)  # the supervisor gone: its worker stops by itself
        wait_for(lambda: not second.is_running() or second.status() == psutil.STATUS_ZOMBIE, 10, "the worker to stop")


@dataclass
class Watched:
    """What one collector of the rolling restart left: its groups, store, log and hook, and whether it outlived it."""

    groups: list[str]
    db_url: str
    log: Path
    hook: HTTPServer
    alive: bool = False


@pytest.fixture(scope="module")
def rolling_restart(kafka3, tmp_path_factory):
    """Each node stopped cleanly and started in turn, then each killed and started: what every upgrade does.

    Two collectors watch the one restart side by side, the offsets-topic tail on in one and off in the
    other, each on three groups of its own with its own store, log and hook (a restart takes ~100 s;
    each used to go through one of its own). The tests read what each left.
    """
    from monitor import devcluster

    unique, tmp = uuid.uuid4().hex[:8], tmp_path_factory.mktemp("rolling")
    with contextlib.ExitStack() as hooks:
        watched: dict[str, Watched] = {}
        procs: dict[str, subprocess.Popen] = {}
        with contextlib.ExitStack() as collectors:
            for tail in ("on", "off"):
                hook = HTTPServer(host="127.0.0.1")
                hook.start()
                hooks.callback(hook.stop)
                (tmp / tail).mkdir()
                groups = [lagging_group(kafka3.bootstrap, f"{unique}{tail}{i}") for i in range(3)]
                w = watched[tail] = Watched(
                    groups, f"sqlite:///{tmp / tail / 'rolling.db'}", tmp / tail / "collect.log", hook
                )
                env = {
                    **collector_env(kafka3.bootstrap, w.db_url, groups[0], tmp / tail, hook),
                    "LAGMON_GROUP_ALLOW": f"^outage-{unique}{tail}\\d-group$",
                    "LAGMON_OFFSETS_TOPIC": tail,
                }
                procs[tail] = collectors.enter_context(collect(env, w.log))
            for tail, w in watched.items():
                wait_for(
                    lambda w=w: messages(w.hook) == ["FIRING"] * 3, 60, f"a lag alert for each group (tail {tail})"
                )
            for kill in (False, True):
                for node in (1, 2, 3):
                    devcluster.stop_node(kafka3.dir, node, kill=kill)
                    time.sleep(3 * INTERVAL_S)
                    devcluster.start_node(kafka3.dir, node)
                    time.sleep(3 * INTERVAL_S)
            settled = now_ms()
            for tail, w in watched.items():
                wait_for(
                    lambda w=w: newest_sample_at(w.db_url) > settled,
                    30,
                    f"a cycle after the restarts, stored (tail {tail})",
                )
            time.sleep(5 * INTERVAL_S)
            for tail, w in watched.items():
                w.alive = procs[tail].poll() is None
        yield watched


@pytest.mark.parametrize("tail", ["on", "off"])
def test_a_rolling_restart_of_kafka_fires_each_alert_once_and_resolves_none(rolling_restart, tail):
    w = rolling_restart[tail]
    assert w.alive, w.log.read_text()
    titles = [m["title"] for m in chat_messages(w.hook)]
    assert sorted(t.split(" [")[0].split()[-1] + " " + t.split(": ")[-1].split(" @ ")[0] for t in titles) == [
        f"FIRING {g}" for g in sorted(w.groups)
    ], (titles, event_kinds(w.db_url), log_messages(w.log.read_text(), "WARNING"))
    assert [k for k in event_kinds(w.db_url) if k.startswith("group_")] == ["group_appeared"] * 3


def coordinator_of(bootstrap: str, group: str) -> int:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept referenced until its future completes
    return admin.describe_consumer_groups([group], request_timeout=10)[group].result(timeout=15).coordinator.id


def test_a_frozen_broker_answers_in_part_and_no_alert_moves(kafka3, unique, tmp_path, httpserver):
    """A broker that stops answering (a long GC pause, a hung disk): the groups it coordinates are not
    answered for, the others are; they stay as last answered instead of disappearing and coming back."""
    groups = [lagging_group(kafka3.bootstrap, f"{unique}frozen{i}") for i in range(3)]
    db_url = f"sqlite:///{tmp_path / 'frozen.db'}"
    log = tmp_path / "collect.log"
    env = {
        **collector_env(kafka3.bootstrap, db_url, groups[0], tmp_path, httpserver),
        "LAGMON_GROUP_ALLOW": f"^outage-{unique}frozen\\d-group$",
        "LAGMON_OFFSETS_TOPIC": "off",  # OffsetFetch and DescribeGroups, the calls a frozen coordinator fails
    }
    from monitor import devcluster

    # as the cluster is now: a test before this one may have restarted nodes (new pids)
    frozen = devcluster.load(kafka3.dir).node(coordinator_of(kafka3.bootstrap, groups[0]))
    with collect(env, log) as proc:
        wait_for(lambda: messages(httpserver) == ["FIRING"] * 3, 60, "a lag alert for each group")
        os.kill(frozen.pid, signal.SIGSTOP)
        try:
            wait_for(lambda: "partial errors" in log.read_text(), 30, "a cycle Kafka answered in part")
            time.sleep(8 * INTERVAL_S)
        finally:
            os.kill(frozen.pid, signal.SIGCONT)
        thawed = now_ms()
        wait_for(lambda: newest_sample_at(db_url) > thawed + 3000, 60, "cycles after the broker answers again")
        assert proc.poll() is None, log.read_text()
    assert messages(httpserver) == ["FIRING"] * 3, [m["title"] for m in chat_messages(httpserver)]
    # the first sight of each, and none gone or back (the coordinator may really move: a broker frozen
    # past its session timeout is fenced, and its partitions get new leaders)
    assert [k for k in event_kinds(db_url) if k.startswith("group_")] == ["group_appeared"] * 3


def event_kinds(db_url: str) -> list[str]:
    return column(db_url, "SELECT kind FROM events ORDER BY id")
