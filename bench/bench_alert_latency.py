"""Alert latency: from a condition becoming true to the chat message arriving at a receiver.

A real Kafka, a real HTTP receiver (Apprise json://), the real collector + alert
engine + outbox sender. Each trial makes a group's lag jump above the rule's
threshold (a produce burst; the condition is true when the burst is acknowledged)
and clocks the firing message's arrival; committing to the log end then resolves it.
Target: at most one poll interval + 2 s. Named peer: Burrow's notifier evaluates
every 60 s by default (`interval` in its [notifier] section), so its latency is
up to 60 s (mean 30 s) before any send; that figure is its documented default,
not measured here (no Go toolchain on this machine).
Also reported: the alert engine's time per cycle, which is spent on the sampling thread.
Run:  .venv/bin/python bench/bench_alert_latency.py [--trials 5] [--intervals 1 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's monitor package

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient, NewTopic

from monitor import devcluster
from monitor.alerts.engine import AlertEngine
from monitor.alerts.notify import OutboxSender
from monitor.alerts.rules import parse_rules
from monitor.collector import Collector
from monitor.health import HealthEngine, HealthStage
from monitor.kafka import KafkaSampler
from monitor.store import Store, make_engine, upgrade

BURROW_NOTIFIER_INTERVAL_S = 60.0
THRESHOLD = 100


class Receiver(BaseHTTPRequestHandler):
    arrivals: ClassVar[list[tuple[float, str]]] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Receiver.arrivals.append((time.time(), body["title"]))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def commit(bootstrap: str, group: str, topic: str, offset: int) -> None:
    for _ in range(60):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        try:
            consumer.commit(offsets=[KTP(topic, 0, offset)], asynchronous=False)
            return
        except Exception:
            time.sleep(0.5)
        finally:
            consumer.close()
    raise RuntimeError("could not commit")


def wait_for(title: str, count: int, timeout_s: float) -> float:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        hits = [at for at, t in Receiver.arrivals if t.startswith(title)]
        if len(hits) >= count:
            return hits[count - 1]
        time.sleep(0.01)
    raise RuntimeError(f"no {title} message #{count} within {timeout_s}s")


class TimedEngine(AlertEngine):
    durations: ClassVar[list[float]] = []

    def __call__(self, result, snapshot, report):
        started = time.perf_counter()
        try:
            super().__call__(result, snapshot, report)
        finally:
            TimedEngine.durations.append(time.perf_counter() - started)


def run_interval(bootstrap: str, tmp: Path, interval: float, trials: int, port: int) -> list[float]:
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"bench-alert-{suffix}", f"bench-alert-{suffix}-group"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    commit(bootstrap, group, topic, 0)
    url = f"sqlite:///{tmp / f'bench-{interval:g}.db'}"
    upgrade(url)
    engine = make_engine(url)
    rules = parse_rules(
        f"rules:\n  - {{name: lag, kind: lag_offsets, above: {THRESHOLD}}}\n",
        "bench.yaml",
        {"hook": f"json://127.0.0.1:{port}/hook"},
    )
    sender = OutboxSender(engine, "bench", rules.channels)
    alerts = TimedEngine(engine, "bench", rules, sender=sender)
    sampler = KafkaSampler({"bootstrap.servers": bootstrap}, "bench", wants_group=lambda g: g == group, timeout_s=5)
    health = HealthStage(engine, HealthEngine("bench", rules.evaluator))
    collector = Collector(sampler, Store(engine), "bench", health=health, observers=[alerts])
    stop = threading.Event()
    thread = threading.Thread(target=collector.run, args=(interval, stop), daemon=True)
    Receiver.arrivals.clear()
    sending = sender.start(stop)
    thread.start()
    latencies = []
    end = 0
    try:
        time.sleep(interval * 1.5)
        for trial in range(1, trials + 1):
            # stagger the burst against the poll phase so the trials sample it
            time.sleep(interval * (trial % 3) / 3 + 0.5)
            for _ in range(THRESHOLD + 1):
                producer.produce(topic, b"x", partition=0)
            producer.flush(30)
            true_at = time.time()
            end += THRESHOLD + 1
            arrived = wait_for("🔴 FIRING", trial, interval * 3 + 30)
            latencies.append(arrived - true_at)
            commit(bootstrap, group, topic, end)
            wait_for("✅ RESOLVED", trial, interval * 3 + 30)
    finally:
        stop.set()
        thread.join(30)
        sending.join(5)
        engine.dispose()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--intervals", type=float, nargs="*", default=[1.0, 10.0])
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory(prefix="lagmon-alert-bench-") as tmp:
        cluster = devcluster.start(Path(tmp) / "kafka")
        try:
            print(
                f"{'poll':>6} {'trials':>6} {'mean':>7} {'max':>7} {'target':>7} {'met':>4} "
                f"{'Burrow max/mean':>16} {'ratio max':>10} {'ratio mean':>11}"
            )
            for interval in args.intervals:
                TimedEngine.durations.clear()
                lat = run_interval(cluster.bootstrap, Path(tmp), interval, args.trials, server.server_port)
                target = interval + 2
                print(
                    f"{interval:>5g}s {len(lat):>6} {statistics.mean(lat):>6.2f}s {max(lat):>6.2f}s {target:>6g}s "
                    f"{'yes' if max(lat) <= target else 'NO':>4} "
                    f"{BURROW_NOTIFIER_INTERVAL_S:>9g}s/{BURROW_NOTIFIER_INTERVAL_S / 2:g}s "
                    f"{BURROW_NOTIFIER_INTERVAL_S / max(lat):>9.1f}x "
                    f"{BURROW_NOTIFIER_INTERVAL_S / 2 / statistics.mean(lat):>10.1f}x",
                    flush=True,
                )
                d = sorted(TimedEngine.durations)
                print(
                    f"       alert engine per cycle on the sampling thread: median {d[len(d) // 2] * 1000:.1f} ms, "
                    f"max {d[-1] * 1000:.1f} ms over {len(d)} cycles"
                )
        finally:
            devcluster.destroy(cluster.dir)
            server.shutdown()


if __name__ == "__main__":
    main()
