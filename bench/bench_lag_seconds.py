"""Lag in seconds against the truth, per traffic shape: how close lagmon is, and whether its stated error holds.

A real Kafka; nine shapes at once (bench/lag_truth.py: steady, bursty, slowing,
idle-then-burst, a stalling consumer, a reset to the log start, CreateTime skewed
an hour, a compacted topic, a LogAppendTime topic), each its own topic and commit-only group. Four
lagmon collectors watch them all, as `collect` runs: 1 s and 5 s polling, each
also with record timestamps read for the 20 least sure partitions
(LAGMON_LAG_EXACT_TOP=20). Named peers, in the same run:
- kafka-lag-exporter's lookup (interpolate, else extrapolate from the first and
  last point; no guards), on each collector's log-end table;
- klag-exporter, the real binary at 5 s polling (it bounds a collection by its
  poll interval: at 1 s its collections time out), in its "message" mode (reads
  the record at the committed offset; compare with 5s+exact) and its "rate" mode
  (offset lag / produce rate; compare with 5s), scraped every 0.25 s. Each new
  answer is compared with the truth when it collected it: while the log end it
  reports was the log end (its method's error, not its staleness; lagmon's
  answers are compared at their own sample times too). Install it with `cargo
  install klag-exporter` (Debian needs libsasl2-dev and libcurl4-openssl-dev) and
  put it on PATH or in KLAG_EXPORTER; without it that peer is left out, and said so.

Per shape and collector: values shown / bounds (≥) / none; p50, p95 and max of
how far each value lies outside what the truth can be; values further from it
than their stated error; bounds the truth broke; values read from the record;
and the kafka-lag-exporter lookup's p95 and max (and its negative or infinite
answers).
Run:  .venv/bin/python bench/bench_lag_seconds.py [--seconds 120]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's monitor package

from lag_truth import SHAPES, Sample, measure, score
from prometheus_client.parser import text_string_to_metric_families

from monitor import devcluster
from monitor.lag import TimeLag

COLLECTORS = {"1s": (1.0, 0), "1s+exact": (1.0, 20), "5s": (5.0, 0), "5s+exact": (5.0, 20)}


def kle_lag_seconds(committed: int, table: list[tuple[int, int]], now: int) -> float:
    """kafka-lag-exporter's LookupTable, ported without its later fixes: ms -> s, may be inf or negative."""
    if len(table) < 2:
        return math.nan
    if committed >= table[-1][0]:
        return 0.0
    for (o1, t1), (o2, t2) in zip(reversed(table[:-1]), reversed(table[1:]), strict=True):
        if o1 <= committed <= o2 and o2 != o1:
            return (now - (t1 + (committed - o1) * (t2 - t1) / (o2 - o1))) / 1000
    (o1, t1), (o2, t2) = table[0], table[-1]
    if o2 == o1:
        return math.inf
    return (now - (t1 + (committed - o1) * (t2 - t1) / (o2 - o1))) / 1000


def free_ports(count: int) -> list[int]:
    """`count` different free loopback ports (held open together while picked, so no two are the same)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]


class Klag:
    """klag-exporter in one mode, watching the harness's groups, and its answers as Samples per shape."""

    SCRAPE_S = 0.25

    def __init__(self, binary: str, mode: str, bootstrap: str, workdir: Path, port: int):
        self.mode, self.port = mode, port
        config = workdir / f"klag-{mode}.toml"
        config.write_text(
            f"""[exporter]
poll_interval = "5s"
http_port = {self.port}
http_host = "127.0.0.1"
granularity = "partition"
[exporter.timestamp_sampling]
enabled = true
mode = "{mode}"
cache_ttl = "1s"
fetch_timeout = "1s"
[exporter.performance]
consumer_groups_cache_ttl = "5s"
# its topic list; the default (5 min) hides the harness's topics, made after it starts, for the whole run
metadata_cache_ttl = "5s"
[[clusters]]
name = "lag-truth"
bootstrap_servers = "{bootstrap}"
group_whitelist = ["^lag-truth-"]
topic_whitelist = [".*"]
topic_blacklist = ["^__.*"]
"""
        )
        self.log = (workdir / f"klag-{mode}.log").open("w")
        self.process = subprocess.Popen([binary, "-c", str(config)], stdout=self.log, stderr=subprocess.STDOUT)
        self.samples: dict[str, list[Sample]] = {name: [] for name in SHAPES}
        self.scrapes, self.failed = 0, 0

    def watch(self, runs, stop) -> None:
        seen: dict[str, tuple] = {}
        while not stop.wait(self.SCRAPE_S):
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=2).read().decode()
                self.scrapes += 1
            except OSError:
                self.failed += 1
                continue
            at = int(time.time() * 1000)
            values: dict[tuple, float] = {}
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    key = (sample.name, sample.labels.get("group"), sample.labels.get("topic"))
                    if sample.labels.get("partition") == "0":
                        values[key] = sample.value
            for name, run in runs.items():
                answer = tuple(
                    values.get((metric, group, run.topic))
                    for metric, group in (
                        ("kafka_consumergroup_group_offset", run.group),
                        ("kafka_partition_latest_offset", None),
                        ("kafka_consumergroup_group_lag_seconds", run.group),
                    )
                )
                if None in answer or answer == seen.get(name):
                    continue
                seen[name] = answer
                sample = self.judge(run, int(answer[0]), int(answer[1]), answer[2], at)
                if sample is not None:
                    self.samples[name].append(sample)

    @staticmethod
    def judge(run, committed: int, log_end: int, seconds: float, scraped: int) -> Sample | None:
        """Its answer beside the truth when it collected: while the log end it reports was the log end
        (from when the record before it was sent to when the next was appended, or the scrape)."""
        if committed >= log_end:
            return Sample(scraped, 0.0, 0.0, TimeLag(seconds), 0.0)
        if log_end > len(run.appended) or committed >= len(run.appended) or run.sent[log_end - 1] == 0:
            return None
        since = run.sent[log_end - 1]
        until = min(scraped, run.appended[log_end]) if log_end < len(run.appended) else scraped
        if run.appended[committed] == 0 or until < since:
            return None
        low = max(0.0, (since - run.appended[committed]) / 1000)
        high = max(0.0, (until - run.sent[committed]) / 1000)
        return Sample(since, low, high, TimeLag(seconds), 0.0)

    def stop(self) -> str:
        """Stop it; a line on how it went."""
        exited = self.process.poll()
        self.process.terminate()
        self.process.wait(10)
        self.log.close()
        answers = sum(len(s) for s in self.samples.values())
        line = f"klag {self.mode}: {answers} answers from {self.scrapes} scrapes ({self.failed} failed)"
        if exited is not None or not answers:
            tail = Path(self.log.name).read_text(errors="replace").splitlines()[-6:]
            line += f"; exit code {exited}; its log ends:\n    " + "\n    ".join(tail)
        return line


def peer_errors(samples) -> tuple[float, float, int]:
    """The peer's p95 and max absolute error over its finite, non-negative answers, and how many were not."""
    answers = [s for s in samples if s.peer is not None and not math.isnan(s.peer)]
    good = sorted(s.miss(s.peer) for s in answers if math.isfinite(s.peer) and s.peer >= 0)
    if not good:
        return math.nan, math.nan, len(answers)
    return good[min(len(good) - 1, math.ceil(len(good) * 0.95) - 1)], good[-1], len(answers) - len(good)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=120.0, help="how long the collectors watch")
    args = parser.parse_args()
    print(f"{platform.node()} {platform.machine()}, CPython {platform.python_version()}, watching {args.seconds:g} s")
    binary = os.environ.get("KLAG_EXPORTER") or shutil.which("klag-exporter")
    if binary is None:
        print("klag-exporter not found (PATH, KLAG_EXPORTER): that peer is left out")
    with tempfile.TemporaryDirectory(prefix="lagmon-lag-bench-") as tmp:
        cluster = devcluster.start(Path(tmp) / "kafka")
        ports = free_ports(2)
        modes = ("message", "rate") if binary else ()
        klags = [
            Klag(binary, mode, cluster.bootstrap, Path(tmp), port) for mode, port in zip(modes, ports, strict=False)
        ]

        def watch_with_klag(runs, stop):
            threads = [threading.Thread(target=k.watch, args=(runs, stop), daemon=True) for k in klags]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

        try:
            got = measure(
                cluster.bootstrap,
                Path(tmp),
                list(SHAPES.values()),
                args.seconds,
                COLLECTORS,
                uuid.uuid4().hex[:8],
                peer=kle_lag_seconds,
                beside=watch_with_klag,
            )
        finally:
            for k in klags:
                print(k.stop())
            devcluster.destroy(cluster.dir)
        for k in klags:
            for name, samples in k.samples.items():
                got.setdefault(f"klag {k.mode}", {})[name] = samples
    print(
        f"{'shape':<17} {'collector':<13} {'values/bounds/none':>18} {'p50':>7} {'p95':>7} {'max':>8} "
        f"{'outside ±':>9} {'bounds broken':>13} {'exact':>5} | {'KLE p95':>8} {'KLE max':>9} {'KLE <0/inf':>10}"
    )
    for name, shape in SHAPES.items():
        for label in got:
            samples = got[label][name]
            s = score(samples)
            k95, kmax, kbad = peer_errors(samples)
            peer = f" | {k95:7.2f}s {kmax:8.2f}s {kbad:>10}" if label in COLLECTORS else ""
            print(
                f"{name:<17} {label:<13} {f'{s.values}/{s.bounds}/{s.unanswered}':>18} {s.p50:6.2f}s {s.p95:6.2f}s "
                f"{s.max:7.2f}s {s.outside:>9} {s.bounds_broken:>13} {s.exact:>5}{peer}"
            )
            for broken in [x for x in samples if x.lag and x.lag.at_least and x.lag.seconds > x.truth_high + x.slack][
                :3
            ]:
                print(f"    bound broken: {broken}")
        print(f"  ({shape.why})")


if __name__ == "__main__":
    main()
