"""Collector cycle time, memory and database growth at scale, against Kafka's own CLI.

Creates `sim many-groups` (default 1000 groups x 20 partitions = 20,000
group-partitions) on a fresh single-node cluster, then in one run:
  - lagmon: 10 collector cycles (sample + store) in a child process: median and
    worst cycle, the child's peak RSS, database growth per stored group-partition
  - peer: `kafka-consumer-groups --describe --all-groups` taking the same snapshot
Run:  .venv/bin/python bench/bench_collector.py [--groups 1000] [--partitions 20] [--cycles 10]
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's monitor, not an installed one

from monitor import devcluster  # noqa: E402

TARGETS = {"cycle_s": 1.0, "ratio": 20.0, "rss_mb": 200.0, "bytes_per_row": 40.0}


def collect_cycles(bootstrap: str, db: str, cycles: int, out, tail: bool = False) -> None:
    """Child process: run the collector `cycles` times; send back timings, sizes and peak RSS.

    With `tail`, the offsets-topic tail runs in its thread first until it has caught up, so the
    cycles take committed offsets from it instead of one OffsetFetch per group.
    """
    import threading

    from monitor.collector import Collector
    from monitor.kafka import KafkaSampler, fetch_offsets_topic_ends
    from monitor.store import Store, make_engine, upgrade
    from monitor.tail import build_offsets_tail

    url = f"sqlite:///{db}"
    upgrade(url)
    engine = make_engine(url)
    store = Store(engine)
    config = {"bootstrap.servers": bootstrap}
    offsets_tail = build_offsets_tail(config, store, "bench", mode="on", span_s=86400,
                                      report=lambda line: None) if tail else None
    sampler = KafkaSampler(config, "bench", offsets_tail=offsets_tail)
    collector = Collector(sampler, store, "bench")
    stop = threading.Event()
    if offsets_tail is not None:
        offsets_tail.start(stop)
        while not offsets_tail.partitions:
            time.sleep(0.1)
        ends = fetch_offsets_topic_ends(sampler.admin, offsets_tail.partitions)
        while not offsets_tail.wait_until_read(ends, 1.0):
            pass
        while offsets_tail.caught_up_at is None:  # the cycles may wait for it from now on
            time.sleep(0.1)
    results, sizes = [], []
    for _ in range(cycles):
        started = time.perf_counter()
        result = collector.poll_once()
        results.append((time.perf_counter() - started, result.duration_ms / 1000, result.partitions,
                        result.ok and sampler.offsets_from_tail == tail))
        with engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        sizes.append(os.path.getsize(db))
        time.sleep(0.2)
    stop.set()
    out.send((results, sizes, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def kafka_cli_describe(bootstrap: str) -> tuple[float, int]:
    from kafka_cli import CONSUMER_GROUPS, run_tool

    started = time.perf_counter()
    out = run_tool(CONSUMER_GROUPS, "--bootstrap-server", bootstrap, "--describe", "--all-groups", timeout=600)
    elapsed = time.perf_counter() - started
    rows = sum(1 for line in out.splitlines() if line.strip() and not line.startswith(("GROUP", "Consumer group")))
    return elapsed, rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--cycles", type=int, default=10)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

    with tempfile.TemporaryDirectory(prefix="lagmon-bench-") as tmp:
        cluster = devcluster.start(Path(tmp) / "kafka")
        try:
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "monitor", "sim", "many-groups", "--bootstrap", cluster.bootstrap,
                            "--groups", str(args.groups), "--partitions", str(args.partitions)], check=True)
            print(f"setup: {args.groups} groups x {args.partitions} partitions created in "
                  f"{time.perf_counter() - started:.1f}s")

            runs = {}
            for tail in (False, True):
                receive, send = multiprocessing.Pipe(duplex=False)
                child = multiprocessing.get_context("spawn").Process(
                    target=collect_cycles, args=(cluster.bootstrap, str(Path(tmp) / f"bench-{tail}.db"), args.cycles,
                                                 send, tail))
                child.start()
                runs[tail] = receive.recv()
                child.join()
            cli_s, cli_rows = kafka_cli_describe(cluster.bootstrap)
        finally:
            devcluster.destroy(cluster.dir)

    tail_results = runs[True][0]
    assert all(r[3] for r in tail_results), "a cycle with the tail failed or did not use the tail's offsets"
    tail_median = statistics.median(r[0] for r in tail_results)
    results, sizes, peak_rss_mb = runs[False]
    cycle_times = [r[0] for r in results]
    rows_per_cycle = results[-1][2]
    assert all(r[3] for r in results), "a collector cycle failed"
    growth = (sizes[-1] - sizes[0]) / (rows_per_cycle * (len(sizes) - 1))
    median = statistics.median(cycle_times)
    print(f"lagmon cycle (sample + store), {rows_per_cycle} group-partitions: median {median:.3f}s, "
          f"worst {max(cycle_times):.3f}s over {len(cycle_times)} cycles (sampling alone median "
          f"{statistics.median(r[1] for r in results):.3f}s)  target <= {TARGETS['cycle_s']}s")
    print(f"kafka-consumer-groups --describe --all-groups: {cli_s:.2f}s for {cli_rows} rows")
    print(f"ratio: lagmon is {cli_s / median:.1f}x faster than the Kafka CLI  target >= {TARGETS['ratio']:.0f}x")
    print(f"with the offsets-topic tail (committed offsets from __consumer_offsets, no OffsetFetch): median "
          f"{tail_median:.3f}s, worst {max(r[0] for r in tail_results):.3f}s; ratio {cli_s / tail_median:.1f}x "
          f"the Kafka CLI  target >= {TARGETS['ratio']:.0f}x; collector peak RSS with the tail "
          f"{runs[True][2]:.0f} MB")
    print(f"collector peak RSS: {peak_rss_mb:.0f} MB  target <= {TARGETS['rss_mb']:.0f} MB")
    print(f"database growth: {growth:.1f} bytes per stored group-partition sample "
          f"({(sizes[-1] - sizes[0]) / 1e6:.1f} MB for {rows_per_cycle * (len(sizes) - 1)} rows)  "
          f"target <= {TARGETS['bytes_per_row']:.0f}")


if __name__ == "__main__":
    main()
