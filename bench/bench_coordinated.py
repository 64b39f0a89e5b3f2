"""Coordinated collectors (`collect --shard kafka`) on bench_collector's busy workload, PostgreSQL store.

    PYTHONPATH=. .venv/bin/python bench/bench_coordinated.py [--groups 250] [--partitions 20]

On a fresh single-node dev cluster (12 __consumer_offsets partitions) with every
group committing every partition once a second (bench/commit_workload.py). The
default is a quarter of bench_collector's busy case (5,000 commits/s): on a 2-core
machine its 20,000/s, the broker and PostgreSQL leave a collector's tail behind
(one collector alone: 290,000 records behind after a minute), and collectors
sharing those two cores cannot show what they would on machines of their own.

1. scaling: 1, 2 and 4 collectors, each measured from outside (CPU-s of `collect`'s
   supervisor and worker per second) beside the records per second that reach the
   __consumer_offsets partitions it holds (its tail reads those and no others);
   the ratio of each to what one collector alone pays;
2. a SIGKILL: 3 collectors and 24 Empty groups with lag that an empty_with_lag
   rule fires for (messages to a local webhook); one collector is killed and every
   group it watched is timed until a survivor's /metrics has it again; then the
   messages sent twice and the alerts that fired again are counted, and five moved
   groups' commits around the kill are compared with what Kafka's ConsoleConsumer
   and OffsetsMessageFormatter print of __consumer_offsets;
3. a rolling restart of the 3 (SIGTERM, start again, wait until it holds
   partitions): the longest time any group was on nobody's /metrics.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import pg_server  # noqa: E402  (bench/, next to this file)
from bench_collector import CollectorMeter, child_env, create_groups, free_port  # noqa: E402
from commit_workload import Workload  # noqa: E402
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from kafka_cli import print_offsets_partition  # noqa: E402

from monitor import devcluster  # noqa: E402
from monitor.shard import coordinator_partition  # noqa: E402
from monitor.sim.scenarios import Options, sim_name  # noqa: E402
from monitor.store import make_engine, upgrade  # noqa: E402
from monitor.store.alerts import read_alerts  # noqa: E402
from monitor.store.collectors import read_collectors  # noqa: E402
from monitor.store.offsets_tail import read_commits  # noqa: E402

OFFSETS, PARTITIONS = "__consumer_offsets", 12
SETTLED_LAG = 20_000  # records a collector's tail may be behind for the fleet to count as settled
RULES = """rules:
  - {name: empty-with-lag, kind: empty_with_lag, severity: warning, groups: {allow: ^bench-lagging-}}
"""
LOGS: Path | None = None  # the collectors' logs, shown when a wait times out
_GROUP = re.compile(r'^lagmon_consumergroup_info\{[^}]*group="([^"]+)"', re.M)


class Hook(BaseHTTPRequestHandler):
    """The chat: a JSON webhook that counts what reaches it."""

    received: ClassVar[list[dict]] = []

    def do_POST(self):
        Hook.received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *_):
        pass


class Collector:
    def __init__(self, env: dict, log: Path):
        self.port = free_port()
        cmd = [sys.executable, "-m", "monitor", "collect", "--shard", "kafka", "--interval", "1s"]
        with open(log, "ab") as out:
            cmd += ["--metrics-port", str(self.port)]
            self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=out, start_new_session=True)
        self.meter = CollectorMeter(self.proc.pid)

    def groups(self) -> set[str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=2) as r:
                return set(_GROUP.findall(r.read().decode()))
        except OSError:
            return set()

    def stop(self, sig=signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(60)


def watched(fleet: list[Collector]) -> dict[str, int]:
    """group -> how many collectors export it now."""
    out: dict[str, int] = {}
    for c in fleet:
        for g in c.groups():
            out[g] = out.get(g, 0) + 1
    return out


def once_each(fleet: list[Collector], groups: list[str]) -> bool:
    seen = watched(fleet)
    return all(seen.get(g) == 1 for g in groups)


def wait(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.25)
    for log in sorted(LOGS.glob("*.log")) if LOGS else ():
        print(f"--- {log.name}, its end:", *log.read_text().splitlines()[-8:], sep="\n   ")
    raise RuntimeError(f"timed out after {timeout:g}s waiting for {what}")


def offsets_ends(admin_config: dict) -> dict[int, int]:
    consumer = Consumer({**admin_config, "group.id": "bench-never-joins"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(OFFSETS, p), timeout=10)[1] for p in range(PARTITIONS)}
    finally:
        consumer.close()


def scaling(bootstrap: str, pg, groups: list[str], counts: list[int], seconds: float, logs: Path) -> None:
    print("\n1. scaling: CPU-s per second of each collector, records/s on the partitions it holds")
    alone = None
    for n in counts:
        cpus, records, total, lag = measure_fleet(bootstrap, pg, groups, n, seconds, logs)
        alone = alone or (max(cpus), max(records))
        print(
            f"   {n} collector(s): CPU-s/s {', '.join(f'{c:.2f}' for c in cpus)} "
            f"(the busiest {max(cpus) / alone[0]:.2f}x one alone); records/s "
            f"{', '.join(f'{r:,.0f}' for r in records)} of {total:,.0f} (the busiest {max(records) / alone[1]:.2f}x); "
            f"largest tail lag at the end {lag:,} records",
            flush=True,
        )


def measure_fleet(bootstrap: str, pg, groups: list[str], n: int, seconds: float, logs: Path):
    """(CPU-s/s per collector, records/s on each one's partitions, records/s in all, largest tail lag at the end)."""
    url, engine = new_store(pg)
    env = child_env(
        LAGMON_BOOTSTRAP_SERVERS=bootstrap, LAGMON_DATABASE_URL=url, LAGMON_CLUSTER_NAME="bench",
        LAGMON_OFFSETS_TOPIC="on", LAGMON_METRICS_GRANULARITY="topic",
    )  # fmt: skip
    fleet = [Collector(env, logs / f"scale-{n}-{i}.log") for i in range(n)]
    config = {"bootstrap.servers": bootstrap}
    try:
        wait(lambda: _settled(engine, n, len(groups)), 300, "every collector holding partitions, its tail caught up")
        time.sleep(5)
        rows = [r for r in read_collectors(engine, "bench") if r.partitions]
        cpu0, ends0, t0 = [c.meter.cpu_s() for c in fleet], offsets_ends(config), time.monotonic()
        time.sleep(seconds)
        cpu1, ends1, t1 = [c.meter.cpu_s() for c in fleet], offsets_ends(config), time.monotonic()
        lag = max((r.tail_lag or 0) for r in read_collectors(engine, "bench"))
    finally:
        for c in fleet:
            c.stop()
        engine.dispose()
    span = t1 - t0
    cpus = sorted((b - a) / span for a, b in zip(cpu0, cpu1, strict=True))
    records = sorted(sum(ends1[p] - ends0[p] for p in r.partitions) / span for r in rows)
    return cpus, records, sum(ends1[p] - ends0[p] for p in range(PARTITIONS)) / span, lag


def new_store(pg):
    """A new database on the server, migrated (as the collectors would), and an engine on it."""
    url = pg.new_database()
    engine = make_engine(url)
    upgrade(engine)
    return url, engine


def _settled(engine, n: int, groups: int) -> bool:
    """`n` collectors reporting, holding every partition and at least `groups` groups, their tails within
    SETTLED_LAG records of the end."""
    rows = [r for r in read_collectors(engine, "bench") if time.time() * 1000 - r.seen_at < 5000]
    return (
        len(rows) == n
        and sum(len(r.partitions) for r in rows) == PARTITIONS
        and sum(r.groups for r in rows) >= groups
        and all(r.tail_lag is not None and r.tail_lag < SETTLED_LAG for r in rows)
    )


def failover(bootstrap: str, pg, groups: list[str], logs: Path) -> None:
    print("\n2. SIGKILL one of 3 collectors; 3. a rolling restart of the 3")
    hook = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    topic = "bench-coordinated-lagging"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # held: a collected client cancels its futures
    admin.create_topics([NewTopic(topic, 1)])[topic].result()
    producer = Producer({"bootstrap.servers": bootstrap})
    for _ in range(20):
        producer.produce(topic, b"x")
    producer.flush()
    lagging = [f"bench-lagging-{i}" for i in range(24)]
    for g in lagging:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": g, "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
        consumer.close()
    rules = logs / "rules.yaml"
    rules.write_text(RULES)
    url, engine = new_store(pg)
    env = child_env(
        LAGMON_BOOTSTRAP_SERVERS=bootstrap, LAGMON_DATABASE_URL=url, LAGMON_CLUSTER_NAME="bench",
        LAGMON_OFFSETS_TOPIC="on", LAGMON_METRICS_GRANULARITY="topic", LAGMON_ALERTS_FILE=str(rules),
        LAGMON_CHANNELS=f"hook=json://127.0.0.1:{hook.server_port}/hook",
    )  # fmt: skip
    everyone = groups + lagging
    fleet = [Collector(env, logs / f"failover-{i}.log") for i in range(3)]
    try:
        wait(lambda: _settled(engine, 3, len(everyone)), 300, "3 collectors holding 4 partitions each")
        wait(lambda: once_each(fleet, everyone), 120, "every group watched by one collector")
        wait(lambda: len(Hook.received) >= len(lagging), 60, "a firing message per lagging group")
        time.sleep(3)
        owners = {g: i for i, c in enumerate(fleet) for g in c.groups()}
        victim = max(range(3), key=lambda i: sum(1 for o in owners.values() if o == i))
        orphans = {g for g, o in owners.items() if o == victim}
        fleet[victim].stop(signal.SIGKILL)
        killed, killed_ms, back = time.monotonic(), int(time.time() * 1000), {}
        survivors = [c for i, c in enumerate(fleet) if i != victim]
        while len(back) < len(orphans) and time.monotonic() - killed < 120:
            now_watched = watched(survivors)
            back.update((g, time.monotonic() - killed) for g in orphans if g in now_watched and g not in back)
            time.sleep(0.2)
        time.sleep(5)
        seconds = sorted(back.values())
        fired = read_alerts(engine, "bench", resolved_since=0)
        assert {a.group_id for a in fired} == set(lagging), "the rule fires for the lagging groups only"
        print(
            f"   SIGKILL: {len(orphans):,} groups moved, watched again after {seconds[0]:.1f}-{seconds[-1]:.1f}s "
            f"(median {seconds[len(seconds) // 2]:.1f}s; the dev cluster's session timeout is 10s, interval 1s); "
            f"{len(orphans) - len(back)} never; messages {len(Hook.received)} for {len(lagging)} alerts (doubled "
            f"{len(Hook.received) - len(lagging)}); alerts re-fired or resolved "
            f"{sum(1 for a in fired if a.state != 'firing')}",
            flush=True,
        )
        missing, doubled, checked = compare_commits(bootstrap, engine, sorted(orphans & set(groups))[:5], killed_ms)
        print(
            f"   commits of 5 moved groups from 5 s before the kill to 3 s ago, against Kafka's ConsoleConsumer "
            f"with OffsetsMessageFormatter: {checked:,} printed, {missing} missing from lagmon's history, "
            f"{doubled} stored twice",
            flush=True,
        )
        fleet[victim] = Collector(env, logs / "failover-restarted.log")
        wait(lambda: _settled(engine, 3, len(everyone)), 120, "3 collectors again")
        gaps, unwatched_since = [], {}
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                now, seen = time.monotonic(), watched(fleet)
                for g in everyone:
                    if g not in seen:
                        unwatched_since.setdefault(g, now)
                    elif g in unwatched_since:
                        gaps.append(now - unwatched_since.pop(g))
                time.sleep(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        for i in range(3):
            fleet[i].stop()
            fleet[i] = Collector(env, logs / f"rolling-{i}.log")
            wait(lambda: _settled(engine, 3, len(everyone)), 120, f"collector {i} back")
            time.sleep(3)
        time.sleep(5)
        stop.set()
        sampler.join()
        print(
            f"   rolling restart: the longest a group was on nobody's /metrics {max(gaps, default=0):.1f}s "
            f"({len(gaps):,} group gaps; still unwatched at the end {len(unwatched_since)}); messages now "
            f"{len(Hook.received)} for {len(lagging)} alerts",
            flush=True,
        )
    finally:
        for c in fleet:
            c.stop()
        engine.dispose()
        hook.shutdown()


def compare_commits(bootstrap: str, engine, groups: list[str], since_ms: int) -> tuple[int, int, int]:
    """(commits Kafka printed that lagmon did not store, commits stored twice, commits printed) for `groups`,
    committed from 5 s before `since_ms` to 3 s ago (the tails have read that far)."""
    lo, hi = since_ms - 5000, int(time.time() * 1000) - 3000
    ends, printed = offsets_ends({"bootstrap.servers": bootstrap}), set()
    for partition in sorted({coordinator_partition(g, PARTITIONS) for g in groups}):
        for record in print_offsets_partition(bootstrap, partition, ends[partition]):
            key, value = record.get("key", {}), record.get("value")
            data = key.get("data", {})
            if key.get("type") in (0, 1) and data.get("group") in groups and value is not None:
                at = value["data"]["commitTimestamp"]
                if lo <= at <= hi:
                    printed.add((data["group"], data["topic"], data["partition"], value["data"]["offset"], at))
    stored = [
        (g, c.topic, c.partition, c.offset, c.committed_at)
        for g in groups
        for c in read_commits(engine, "bench", g, since=lo)
        if c.committed_at <= hi
    ]
    return len(printed - set(stored)), len(stored) - len(set(stored)), len(printed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=250)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--collectors", default="1,2,4")
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    print(f"machine: {platform.node()}, {os.cpu_count()} cores; Python {platform.python_version()} ({sys.executable})")
    with tempfile.TemporaryDirectory(prefix="lagmon-bench-coord-") as tmp:
        global LOGS
        tmp_path = LOGS = Path(tmp)
        cluster, pg = devcluster.start(tmp_path / "kafka", nodes=1), pg_server.start()
        workload = None
        try:
            bootstrap = cluster.bootstrap
            create_groups(bootstrap, args.groups, args.partitions)
            options = Options(bootstrap)
            groups = [sim_name("many-groups", options, f"g{i:04d}") for i in range(args.groups)]
            workload = Workload(bootstrap, sim_name("many-groups", options, "topic"), args.partitions, groups)
            wait(lambda: workload.has_done(args.groups), 120, "the workload's first round")
            before = workload.counts()
            scaling(bootstrap, pg, groups, [int(n) for n in args.collectors.split(",")], args.seconds, tmp_path)
            failover(bootstrap, pg, groups, tmp_path)
            print(f"\nworkload ({args.groups:,} groups x {args.partitions} partitions): {workload.rate_since(before)}")
        finally:
            if workload is not None:
                workload.close()
            pg_server.stop(pg)
            devcluster.destroy(tmp_path / "kafka")


if __name__ == "__main__":
    main()
