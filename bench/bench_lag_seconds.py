"""Lag in seconds: lagmon's interpolation and exact mode against produce timestamps we know.

A real Kafka; a producer stamps every record with its own clock while running
a steady phase, a pause (a flat log end) and a faster phase; a commit-only
group (never a member) commits every second the offset produced DELAY_S ago.
Truth at each sample = sample time - timestamp of the record at the committed
offset (0 when caught up). Two collectors (1 s and 10 s polling) run lagmon's
alert engine; per sample we compare with the truth:
  interpolation  lagmon's monitor.lag.compute_time_lag over the engine's log-end table
  exact          the record timestamp read at the committed offset (LAGMON_LAG_EXACT_TOP)
  KLE-style      named peer: kafka-lag-exporter's lookup (interpolate, else extrapolate
                 from the first/last point; no guards) over the same table
Run:  .venv/bin/python bench/bench_lag_seconds.py [--phase 20]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's monitor package

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient, NewTopic

from monitor import devcluster
from monitor.alerts.rules import parse_rules
from monitor.collector import Collector
from monitor.health import HealthEngine, HealthStage
from monitor.kafka import KafkaSampler, RecordTimestampReader
from monitor.lag import compute_time_lag
from monitor.models import TopicPartition
from monitor.store import Store, make_engine, upgrade

DELAY_S = 8.0


def kle_lag_seconds(committed: int, table: list[tuple[int, int]], now: int) -> float:
    """kafka-lag-exporter's LookupTable, ported without its later fixes: ms -> s, may be inf or negative."""
    if len(table) < 2:
        return float("nan")
    if committed >= table[-1][0]:
        return 0.0
    for (o1, t1), (o2, t2) in zip(reversed(table[:-1]), reversed(table[1:]), strict=True):
        if o1 <= committed <= o2 and o2 != o1:
            return (now - (t1 + (committed - o1) * (t2 - t1) / (o2 - o1))) / 1000
    (o1, t1), (o2, t2) = table[0], table[-1]
    if o2 == o1:
        return float("inf")
    return (now - (t1 + (committed - o1) * (t2 - t1) / (o2 - o1))) / 1000


class Workload:
    def __init__(self, bootstrap: str, topic: str, group: str, phase_s: float):
        self.bootstrap, self.topic, self.group, self.phase_s = bootstrap, topic, group, phase_s
        self.stamps: dict[int, int] = {}  # offset -> produce timestamp (ms)
        self.done = threading.Event()

    def produce(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 0})

        def delivered(err, msg):
            if err is None:
                self.stamps[msg.offset()] = msg.timestamp()[1]

        for rate, seconds in ((50, self.phase_s), (0, self.phase_s * 0.75), (200, self.phase_s)):
            end = time.time() + seconds
            while time.time() < end:
                if rate:
                    producer.produce(
                        self.topic, b"x", partition=0, timestamp=int(time.time() * 1000), on_delivery=delivered
                    )
                    producer.poll(0)
                    time.sleep(1 / rate)
                else:
                    producer.poll(0.1)  # keep delivery reports flowing through the pause
        producer.flush(30)
        self.done.set()

    def commit(self) -> None:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group, "enable.auto.commit": False})
        try:
            while not self.done.is_set():
                cutoff = int((time.time() - DELAY_S) * 1000)
                older = [o for o, ts in list(self.stamps.items()) if ts <= cutoff]
                if older:
                    with contextlib.suppress(Exception):
                        consumer.commit(offsets=[KTP(self.topic, 0, max(older) + 1)], asynchronous=False)
                time.sleep(1.0)
        finally:
            consumer.close()

    def truth(self, committed: int, log_end: int, at: int) -> float | None:
        if committed >= log_end:
            return 0.0
        ts = self.stamps.get(committed)
        return None if ts is None else max(0.0, (at - ts) / 1000)


class Recorder:
    """A collector observer after the health step: every method's answer at every sample.

    lagmon's interpolation runs on the same log-end table kafka-lag-exporter's method
    gets; the exact answer (record timestamps) is the health engine's.
    """

    def __init__(self, workload: Workload):
        self.workload, self.rows, self.table = workload, [], []

    def __call__(self, result, snapshot, report):
        if snapshot is None or report is None or self.workload.group not in report.groups:
            return
        tp = TopicPartition(self.workload.topic, 0)
        at = snapshot.taken_at
        self.table.append((snapshot.partitions[tp].log_end, at))
        health = next((p for p in report.groups[self.workload.group].partitions if p.tp == tp), None)
        committed = None if health is None else health.committed
        if committed is None:
            return
        truth = self.workload.truth(committed, snapshot.partitions[tp].log_end, at)
        if truth is None:
            return
        exact = health.clock.at(at) if health.clock is not None and health.clock.exact else None
        self.rows.append(
            (truth, compute_time_lag(committed, self.table, at), exact, kle_lag_seconds(committed, self.table, at))
        )


def summary(name: str, errors: list[float], bad: int, bounds: int = 0) -> str:
    if not errors:
        return f"  {name:<14} no samples"
    errors = sorted(abs(e) for e in errors)
    p95 = errors[min(len(errors) - 1, int(len(errors) * 0.95))]
    return (
        f"  {name:<14} n={len(errors):>3}  mean |err| {statistics.mean(errors):6.2f}s  p95 {p95:6.2f}s  "
        f"max {errors[-1]:7.2f}s  non-finite/negative {bad}" + (f"  bounds(≥) {bounds}" if bounds else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--phase", type=float, default=20.0, help="seconds per workload phase")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lagmon-lag-bench-") as tmp:
        cluster = devcluster.start(Path(tmp) / "kafka")
        try:
            suffix = uuid.uuid4().hex[:8]
            topic, group = f"bench-lag-{suffix}", f"bench-lag-{suffix}-group"
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
            admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
            workload = Workload(cluster.bootstrap, topic, group, args.phase)
            rules = parse_rules("rules: []\n", "bench.yaml")
            stop = threading.Event()
            recorders, threads, samplers = {}, [], []
            for interval in (1.0, 10.0):
                url = f"sqlite:///{Path(tmp) / f'lag-{interval:g}.db'}"
                upgrade(url)
                engine = make_engine(url)
                reader = RecordTimestampReader({"bootstrap.servers": cluster.bootstrap})
                rec = Recorder(workload)
                health = HealthStage(
                    engine,
                    HealthEngine("bench", rules.evaluator, exact_reader=reader, exact_top=20),
                )
                sampler = KafkaSampler(
                    {"bootstrap.servers": cluster.bootstrap}, "bench", wants_group=lambda g: g == group, timeout_s=5
                )
                collector = Collector(sampler, Store(engine), "bench", health=health, observers=[rec])
                samplers.append((sampler, reader))
                recorders[interval] = rec
                threads.append(threading.Thread(target=collector.run, args=(interval, stop), daemon=True))
            producer = threading.Thread(target=workload.produce, daemon=True)
            committer = threading.Thread(target=workload.commit, daemon=True)
            for t in (producer, committer, *threads):
                t.start()
            producer.join()
            time.sleep(DELAY_S + 2)
            stop.set()
            for t in threads:
                t.join(30)
            committer.join(10)
            for sampler, reader in samplers:
                sampler.close()
                reader.close()
            del admin
            print(
                f"workload: 50/s for {args.phase:g}s, pause {args.phase * 0.75:g}s, 200/s for {args.phase:g}s; "
                f"the group commits what was produced {DELAY_S:g}s ago"
            )
            for interval, rec in recorders.items():
                rows = rec.rows
                print(f"poll {interval:g}s ({len(rows)} samples):")
                interp = [(i.seconds - t) for t, i, _, _ in rows if i is not None and not i.at_least]
                print(summary("interpolation", interp, sum(1 for _, i, _, _ in rows if i is None)))
                bounds = [(i.seconds, t) for t, i, _, _ in rows if i is not None and i.at_least]
                held = sum(1 for bound, t in bounds if bound <= t + 0.5)
                print(
                    f"  {'bounds (≥ X)':<14} n={len(bounds):>3}  X <= truth (+0.5 s) in {held} of {len(bounds)}"
                    f" (the record was older than the history)"
                )
                exact = [(e.seconds - t) for t, _, e, _ in rows if e is not None]
                print(summary("exact", exact, 0))
                kle = [k for _, _, _, k in rows]
                kle_ok = [(k - t) for t, _, _, k in rows if math.isfinite(k) and k >= 0]
                print(summary("KLE-style", kle_ok, sum(1 for k in kle if not math.isfinite(k) or k < 0)))
        finally:
            devcluster.destroy(cluster.dir)


if __name__ == "__main__":
    main()
