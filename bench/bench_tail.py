"""Offsets-topic tail: end-to-end records/s (consume + decode + store) and catch-up after a restart.

On a fresh single-node cluster, bench-owned groups commit --records offsets
(AdminClient.alter_consumer_group_offsets, many partitions per request, no
member ever joins), then in one run:
  - lagmon first start: an empty database, the tail reads and stores every record
    (span 24 h): records/s until it has read to the end offsets
  - lagmon restart: the same database, positions stored: seconds until the tail
    has rebuilt its state and is caught up (nothing is stored twice)
  - peer: Kafka's own ConsoleConsumer with OffsetsMessageFormatter reading the same
    records (JVM start included), output to /dev/null
  - with --stages: the tail's own CPU per record, one stage more per pass over the
    same records (process CPU, librdkafka's threads included): consume only; as
    TailRecords; decoded; folded into TailState; stored. Scaled to 20,000 commits,
    it is the tail's part of a collector cycle in which 20,000 group-partitions
    commit (bench_collector.py case (b)).
Run:  .venv/bin/python bench/bench_tail.py [--records 1000000] [--stages]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's monitor, not an installed one

from confluent_kafka import ConsumerGroupTopicPartitions
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient, NewTopic

from monitor import devcluster
from monitor.devcluster import LIBS_DIR
from monitor.kafka import OFFSETS_TOPIC, OffsetsTopicReader, fetch_offsets_topic_ends
from monitor.offsets_topic import decode
from monitor.offsets_topic.history import TailState
from monitor.store import Store, make_engine, upgrade
from monitor.store.offsets_tail import write_tail_update
from monitor.tail import build_offsets_tail

TARGETS = {"records_per_s": 50_000}
STAGES = ("consume", "records", "decode", "fold", "store")
CYCLE_COMMITS = 20_000  # bench_collector.py case (b) at 1,000 groups x 20 partitions
PARTITIONS = 200  # partitions per commit request (one OffsetCommit, PARTITIONS records)
GROUPS = 50
IN_FLIGHT = 50


def fill(bootstrap: str, records: int) -> None:
    """Write about `records` offset commits into __consumer_offsets through the admin API."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("bench-tail", num_partitions=PARTITIONS)])["bench-tail"].result(60)
    requests = records // PARTITIONS
    deadline = time.monotonic() + 120
    for g in range(GROUPS):  # first commits create __consumer_offsets and load each coordinator: one at a time
        while True:
            try:
                admin.alter_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(f"bench-tail-g{g:03d}", [KTP("bench-tail", 0, 0)])],
                    request_timeout=10,
                )[f"bench-tail-g{g:03d}"].result()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    pending = []
    for i in range(requests):
        group = f"bench-tail-g{i % GROUPS:03d}"
        offsets = [KTP("bench-tail", p, i + 1) for p in range(PARTITIONS)]
        pending += admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, offsets)], request_timeout=60
        ).values()
        if len(pending) >= IN_FLIGHT:
            for f in pending:
                f.result()
            pending = []
    for f in pending:
        f.result()


def run_tail(bootstrap: str, url: str, ends: dict[int, int]) -> tuple[float, int]:
    """Start a tail, wait until it has read up to `ends`; (seconds, records read)."""
    store = Store(make_engine(url))
    tail = build_offsets_tail({"bootstrap.servers": bootstrap}, store, "bench", mode="on", span_s=86400)
    stop = threading.Event()
    started = time.perf_counter()
    thread = tail.start(stop)
    while not tail.wait_until_read(ends, 1.0):
        if not thread.is_alive():
            raise SystemExit("the tail stopped")
    elapsed = time.perf_counter() - started
    stop.set()
    thread.join(timeout=30)
    return elapsed, tail.records_read


def tail_stage_cpu(bootstrap: str, stage: str, url: str) -> tuple[float, int]:
    """(process CPU seconds, records) for reading the whole topic once, up to and including `stage`."""
    reader = OffsetsTopicReader({"bootstrap.servers": bootstrap})
    reader.open(lambda p: None)
    total = sum(reader.fetch_ends().values())
    state, store = TailState({}, since_ms=0), Store(make_engine(url))
    read = 0
    started = time.process_time()
    while read < total:
        if stage == "consume":
            read += sum(1 for m in reader.consumer.consume(num_messages=10_000, timeout=0.5) if m.error() is None)
            continue
        records, _, _ = reader.fetch_batch(10_000, 0.5)
        read += len(records)
        if stage == "decode":
            for r in records:
                decode(r.key, r.value)
        elif stage in ("fold", "store"):
            update = state.apply(records)
            if stage == "store":
                write_tail_update(store, "bench", update, int(time.time() * 1000))
    cpu = time.process_time() - started
    reader.close()
    return cpu, read


def print_stages(bootstrap: str, tmp: Path) -> None:
    print(f"the tail's CPU per record, by stage (each pass adds one), and for {CYCLE_COMMITS:,} commits:")
    before = 0.0
    for i, stage in enumerate(STAGES):
        url = f"sqlite:///{tmp / f'stage{i}.db'}"
        upgrade(url)
        cpu, read = tail_stage_cpu(bootstrap, stage, url)
        per = cpu / read * 1e6
        print(f"  {stage:8} {per:5.2f} CPU-us/record (+{per - before:4.2f})   {per * CYCLE_COMMITS / 1e6:.3f} CPU-s")
        before = per


def kafka_formatter(bootstrap: str, records: int) -> float:
    started = time.perf_counter()
    subprocess.run(
        [
            "java",
            "-Xmx512m",
            "-Dlog4j2.level=error",
            "-cp",
            f"{LIBS_DIR}/*",
            "org.apache.kafka.tools.consumer.ConsoleConsumer",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            OFFSETS_TOPIC,
            "--from-beginning",
            "--max-messages",
            str(records),
            "--timeout-ms",
            "20000",
            "--consumer-property",
            "exclude.internal.topics=false",
            "--formatter",
            "org.apache.kafka.tools.consumer.OffsetsMessageFormatter",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=900,
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--stages", action="store_true", help="also the tail's CPU per record, stage by stage")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lagmon-bench-tail-") as tmp:
        cluster = devcluster.start(Path(tmp) / "kafka")
        try:
            started = time.perf_counter()
            fill(cluster.bootstrap, args.records)
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
            partitions = sorted(admin.list_topics(OFFSETS_TOPIC, timeout=10).topics[OFFSETS_TOPIC].partitions)
            ends = fetch_offsets_topic_ends(admin, partitions)
            total = sum(ends.values())
            print(
                f"setup: {total:,} records in __consumer_offsets ({len(partitions)} partitions) "
                f"written in {time.perf_counter() - started:.1f}s"
            )
            url = f"sqlite:///{Path(tmp) / 'tail.db'}"
            upgrade(url)
            first_s, first_n = run_tail(cluster.bootstrap, url, ends)
            again_s, again_n = run_tail(cluster.bootstrap, url, ends)
            peer_s = kafka_formatter(cluster.bootstrap, total)
            if args.stages:
                print_stages(cluster.bootstrap, Path(tmp))
        finally:
            devcluster.destroy(cluster.dir)
    print(
        f"lagmon first start (consume + decode + store {first_n:,} records): {first_s:.1f}s = "
        f"{first_n / first_s:,.0f} records/s  target >= {TARGETS['records_per_s']:,}"
    )
    print(
        f"lagmon restart, catch-up over {again_n:,} records (state rebuilt, nothing stored twice): {again_s:.1f}s "
        f"= {again_n / again_s:,.0f} records/s"
    )
    print(
        f"peer: Kafka ConsoleConsumer + OffsetsMessageFormatter over the same records: {peer_s:.1f}s "
        f"(JVM start included) = {total / peer_s:,.0f} records/s"
    )
    print(
        f"ratio: lagmon end to end is {peer_s / first_s:.2f}x the speed of Kafka's own formatter; "
        f"catch-up {peer_s / again_s:.2f}x"
    )


if __name__ == "__main__":
    main()
