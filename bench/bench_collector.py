"""Collector cost per cycle as the user runs it: the real `collect` command, measured from outside.

An in-process `Collector.poll_once()` without the alert engine, the exporter and
the offsets-topic tail times a pipeline nobody runs, and trusts the collector's
own timer. So this starts `python -m monitor collect --interval 1s --metrics-port N`
(tail on, default alert rules, /metrics scraped every 15 s like Prometheus) as a
child and reads /proc and its stdout. For each size (--groups x --partitions,
groups made by `sim many-groups` on a fresh single-node cluster):
  (a) nothing changing; then SIGTERM and the same command on the same database:
      process start -> first cycle line ("first cycle after a restart")
  (b) every group commits each cycle: a workload in its own process (not
      counted) produces to every partition and commits new offsets for every group
      once per interval (--interval, 1 s by default); the commits/s it achieved are printed
  peer: `kafka-consumer-groups --describe --all-groups`, wall and CPU
  --share-groups N / --streams-groups N add that many share groups (KIP-932: a ShareConsumer
  each acknowledged a record, so each has share-partition state) and streams groups
  (KIP-1071: one JVM ran N LagmonStreams applications until RUNNING), idle during the cases:
  groups librdkafka cannot list, read from the coordinators' records by the tails
Per case, after warm-up (tail caught up, cycles say "offsets from the tail", 2 more):
  wall per cycle  = the child's main thread leaving its sleep between cycles -> the cycle line
                    (sampled every 5 ms from /proc/PID/task/PID)
  gap             = time between cycle lines: about the interval while cycles are shorter,
                    so it cannot show a 0.25 s cycle; printed as the cadence the user sees
  CPU-s per cycle = utime+stime of `collect`'s supervisor and its worker (tail, alerts, exporter,
                    librdkafka threads included) between cycle lines
  peak RSS        = VmHWM of the supervisor plus the worker's; in (b) read at least 75 s after the
                    workload's first round, so it covers a save of the health state (every minute)
Run:  PYTHONPATH=. .venv/bin/python bench/bench_collector.py [--groups 1000,5000] [--partitions 20]
          [--cycles 20] [--cases a,b] [--interval 1] [--skip-peer] [--share-groups 100] [--streams-groups 100]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's monitor, not an installed one

from commit_workload import Workload  # noqa: E402  (bench/, next to this file)
from proc_usage import ProcessMeter  # noqa: E402
from stage_profile import Profile, profile_worker  # noqa: E402

from monitor import devcluster  # noqa: E402
from monitor.health.stage import SAVE_EVERY_MS  # noqa: E402
from monitor.sim.scenarios import Options, sim_name  # noqa: E402

SCRAPE_EVERY_S = 15.0
SAMPLE_EVERY_S = 0.005  # main-thread sampling: the resolution of "wall per cycle"
WARMUP_TIMEOUT_S = 900.0
CYCLE = re.compile(r"(\d+) groups, (\d+) partitions in\b")
FAILED_CYCLE = re.compile(r" collector: sample failed: ")
OWN_FIGURE = re.compile(r" partitions in (\d+(?:\.\d+)?)\s*s\b")

# (b)'s peak RSS is read no sooner than this after the workload's first round: by then the worker has saved
# its health state (every minute) with windows full of the workload's commits, its costliest moment
LOADED_SAVE_S = SAVE_EVERY_MS / 1000 + 15
PROFILE_S = 15.0  # py-spy's window, after the measured cycles (its sampling is not in their figures)
REFERENCE_LOOP = "x = 0\nfor i in range(10_000_000):\n    x += i"  # the machine's pace, printed with every run
# (group-partitions, interval s, case, measure, limit, unit): the collector's speed targets, judged on the medians
TARGETS = [
    (20_000, 1.0, "a", "cpu", 0.05, "CPU-s"),
    (20_000, 1.0, "b", "cpu_per_s", 0.45, "CPU-s/s"),
    (20_000, 1.0, "b", "wall", 0.5, "s"),
    (100_000, 5.0, "b", "wall", 5.0, "s"),  # keeps up: Kafka's default auto-commit interval is 5 s too
    (20_000, 1.0, "a", "rss", 120.0, "MB"),
    (20_000, 1.0, "b", "rss", 104.0, "MB"),
    (20_000, 1.0, "a", "restart", 2.0, "s"),
]
CASE_NAMES = {"a": "nothing changing", "b": "every group commits"}


# ---------------------------------------------------------------- measuring the child from outside


@dataclass
class Cycle:
    at: float  # time.monotonic() when the line arrived
    cpu_s: float  # the child's CPU seconds then
    groups: int
    partitions: int
    own_s: float | None  # the "in X s" the collector printed, if it still prints one
    from_tail: bool
    failed: bool  # "sample failed": a cycle all the same (its time and CPU count)
    partial_errors: bool


class CycleWatcher(threading.Thread):
    """Reads the child's stdout; timestamps each cycle line and reads the child's CPU at that moment.

    Other lines (start-up, tail, alerts) are kept for the warm-up test and for errors.
    """

    def __init__(self, proc: subprocess.Popen, meter: CollectorMeter):
        super().__init__(daemon=True, name="cycle-watcher")
        self.proc, self.meter = proc, meter
        self.cycles: list[Cycle] = []
        self.lines: list[str] = []
        self.caught_up = False
        self._cond = threading.Condition()

    def run(self) -> None:
        for line in self.proc.stdout:
            at = time.monotonic()
            match, failed = CYCLE.search(line), FAILED_CYCLE.search(line)
            cpu = self._cpu() if match or failed else None
            with self._cond:
                if cpu is not None:
                    own = OWN_FIGURE.search(line)
                    self.cycles.append(
                        Cycle(
                            at,
                            cpu,
                            int(match[1]) if match else 0,
                            int(match[2]) if match else 0,
                            float(own[1]) if own else None,
                            "offsets from the tail" in line,
                            bool(failed),
                            "partial errors" in line,
                        )
                    )
                else:
                    self.lines.append(line.rstrip())
                    self.caught_up |= "offsets-topic tail caught up" in line
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def _cpu(self) -> float | None:
        try:
            return self.meter.cpu_s()
        except OSError:  # the child is gone
            return None

    def wait_for(self, ready, timeout_s: float, what: str) -> None:
        """Block until ready(self) holds; fail with the child's last lines when it exits or times out."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while not ready(self):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    tail = "\n    ".join(self.lines[-15:])
                    state = f"exited with {self.proc.returncode}" if self.proc.poll() is not None else "timed out"
                    raise RuntimeError(f"collector {state} waiting for {what}; its last lines:\n    {tail}")
                self._cond.wait(1.0)

    def warmed_up(self) -> bool:
        """The tail has caught up, a cycle took its offsets, and 2 more cycles ran."""
        first = next((i for i, c in enumerate(self.cycles) if c.from_tail), None)
        return self.caught_up and first is not None and len(self.cycles) > first + 2


class MainThreadWatch(threading.Thread):
    """Samples the child's main thread every 5 ms, so a cycle's start (its wake from sleep) can be found."""

    def __init__(self, meter: CollectorMeter):
        super().__init__(daemon=True, name="main-thread-watch")
        self.meter = meter
        self.samples: list[tuple[float, bool, int]] = []  # (monotonic, sleeping, run ns)
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(SAMPLE_EVERY_S):
            try:
                sleeping, run_ns = self.meter.main_thread()
            except OSError:
                return
            self.samples.append((time.monotonic(), sleeping, run_ns))


def cycle_starts(lines: list[float], samples: list[tuple[float, bool, int]], interval_s: float) -> list[float | None]:
    """When each cycle started, from its predecessor's line time and the main thread's samples.

    `collect` sleeps until the next interval after a cycle, or starts the next one at once if
    the cycle took longer than the interval. So a cycle starts right at the previous line when
    that one overran, else where the main thread's first sleep after that line ends (its CPU time
    grows again). The first cycle has no predecessor: None.
    """
    starts: list[float | None] = [None]
    j = 0
    for prev, line in pairwise(lines):
        previous_start = starts[-1]
        start = prev
        if previous_start is None or prev - previous_start < interval_s:
            while j < len(samples) and samples[j][0] <= prev:
                j += 1
            slept = False
            for k in range(max(j, 1), len(samples)):
                t, sleeping, run_ns = samples[k]
                if t >= line:
                    break
                asleep = sleeping and run_ns == samples[k - 1][2]
                if slept and not asleep:
                    start = samples[k - 1][0]  # the last sample still asleep: it woke within 5 ms after
                    break
                slept |= asleep
        starts.append(start)
    return starts


class Scraper(threading.Thread):
    """GET /metrics every 15 s like Prometheus; its wall time and the child's CPU meanwhile, apart from cycles."""

    def __init__(self, port: int, meter: CollectorMeter):
        super().__init__(daemon=True, name="scraper")
        self.url, self.meter = f"http://127.0.0.1:{port}/metrics", meter
        self.scrapes: list[tuple[float, float]] = []  # (wall s, child CPU s during it)
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(SCRAPE_EVERY_S):
            try:
                cpu, started = self.meter.cpu_s(), time.perf_counter()
                with urllib.request.urlopen(self.url, timeout=30) as response:
                    response.read()
                self.scrapes.append((time.perf_counter() - started, self.meter.cpu_s() - cpu))
            except OSError:
                pass  # not serving yet, or gone


# ---------------------------------------------------------------- the collector child


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env(**lagmon: str) -> dict[str, str]:
    """The caller's environment without its LAGMON_* settings (defaults apply), this checkout first on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAGMON_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(lagmon)
    return env


class CollectorMeter:
    """`collect` is a supervisor and its worker (monitor/supervisor.py): CPU and peak RSS of the two, as the
    user pays them, and the worker's main thread, where the cycles run."""

    def __init__(self, supervisor_pid: int):
        self.supervisor = ProcessMeter(supervisor_pid)
        deadline = time.monotonic() + 30
        while not (workers := psutil.Process(supervisor_pid).children()):
            if time.monotonic() > deadline:
                raise RuntimeError("collect started no worker within 30 s")
            time.sleep(0.01)
        self.worker = ProcessMeter(workers[0].pid)

    def cpu_s(self) -> float:
        return self.supervisor.cpu_s() + self.worker.cpu_s()

    def peak_rss_mb(self) -> float:
        return self.supervisor.peak_rss_mb() + self.worker.peak_rss_mb()

    def main_thread(self) -> tuple[bool, int]:
        return self.worker.main_thread()


class CollectorChild:
    """`python -m monitor collect --interval Ns --metrics-port N` with its watchers; stop() is SIGTERM."""

    def __init__(self, bootstrap: str, db: Path, interval_s: float, scrape: bool = True):
        port = free_port()
        env = child_env(
            LAGMON_BOOTSTRAP_SERVERS=bootstrap, LAGMON_DATABASE_URL=f"sqlite:///{db}", LAGMON_OFFSETS_TOPIC="on"
        )
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "monitor", "collect", "--interval", f"{interval_s:g}s", "--metrics-port", str(port)],
            cwd=ROOT,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self.meter = CollectorMeter(self.proc.pid)
        self.watcher = CycleWatcher(self.proc, self.meter)
        self.threads = MainThreadWatch(self.meter)
        self.scraper = Scraper(port, self.meter) if scrape else None
        for thread in (self.watcher, self.threads, self.scraper):
            if thread is not None:
                thread.start()

    def stop(self) -> None:
        self.threads.stop.set()
        if self.scraper is not None:
            self.scraper.stop.set()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.watcher.join(5)


# ---------------------------------------------------------------- one case


@dataclass
class CaseResult:
    groups: int
    partitions: int
    interval_s: float
    case: str
    walls: list[float]
    gaps: list[float]
    cpus: list[float]
    own: list[float]
    rss_mb: float
    not_from_tail: int
    failed: int
    partial_errors: int
    scrapes: list[tuple[float, float]]
    workload: dict = field(default_factory=dict)
    restart: tuple[float, float, bool] | None = None  # (wall s, CPU s since start, offsets from the tail)
    seen_groups: int = 0  # the most groups a measured cycle line names (share and streams groups included)
    cpu_per_s: float = 0.0  # the whole process's CPU-s per second over the measured cycles
    profile: Profile | None = None  # per thread and stage, over PROFILE_S after them (None: no py-spy)

    @property
    def size(self) -> int:
        return self.groups * self.partitions

    def value(self, measure: str) -> float | None:
        return {
            "cpu": statistics.median(self.cpus),
            "cpu_per_s": self.cpu_per_s,
            "wall": statistics.median(self.walls),
            "rss": self.rss_mb,
            "restart": self.restart[0] if self.restart else None,
        }[measure]


def run_case(
    bootstrap: str, db: Path, groups: int, partitions: int, interval_s: float, case: str, cycles: int
) -> CaseResult:
    """Warm up (tail caught up, a cycle with its offsets, 2 more); for (b) start the workload, wait for
    its first full round and skip 2 more cycles; then measure `cycles` cycles."""
    child, workload, rate = CollectorChild(bootstrap, db, interval_s), None, {}
    watcher = child.watcher
    try:
        watcher.wait_for(lambda w: w.warmed_up(), WARMUP_TIMEOUT_S, "the tail to catch up")
        if case == "b":
            options = Options(bootstrap)
            workload = Workload(
                bootstrap,
                sim_name("many-groups", options, "topic"),
                partitions,
                [sim_name("many-groups", options, f"g{i:04d}") for i in range(groups)],
                period_s=interval_s,
            )
            watcher.wait_for(lambda w: workload.has_done(groups), WARMUP_TIMEOUT_S, "the workload's first round")
            loaded_at = time.monotonic()
            skip_to = len(watcher.cycles) + 2
            watcher.wait_for(lambda w: len(w.cycles) >= skip_to, WARMUP_TIMEOUT_S, "2 cycles with the workload")
        first = len(watcher.cycles) - 1
        before = workload.counts() if workload else None
        watcher.wait_for(lambda w: len(w.cycles) > first + cycles, WARMUP_TIMEOUT_S + cycles * 60, f"{cycles} cycles")
        if workload is not None:
            rate = workload.rate_since(before)
            watcher.wait_for(lambda w: time.monotonic() - loaded_at >= LOADED_SAVE_S, LOADED_SAVE_S, "a loaded save")
        rss = child.meter.peak_rss_mb()
        profile = profile_worker(child.meter.worker, PROFILE_S)
    finally:
        if workload is not None:
            workload.close()
        child.stop()
    seen = watcher.cycles[: first + cycles + 1]
    starts = cycle_starts([c.at for c in seen], child.threads.samples, interval_s)[first + 1 :]
    pairs = list(pairwise(seen[first:]))
    return CaseResult(
        groups,
        partitions,
        interval_s,
        case,
        walls=[c.at - s for (_, c), s in zip(pairs, starts, strict=True)],
        gaps=[c.at - p.at for p, c in pairs],
        cpus=[c.cpu_s - p.cpu_s for p, c in pairs],
        own=[c.own_s for _, c in pairs if c.own_s is not None],
        rss_mb=rss,
        not_from_tail=sum(1 for _, c in pairs if not c.from_tail),
        failed=sum(1 for _, c in pairs if c.failed),
        partial_errors=sum(1 for _, c in pairs if c.partial_errors),
        scrapes=list(child.scraper.scrapes),
        workload=rate,
        seen_groups=max((c.groups for _, c in pairs), default=0),
        cpu_per_s=(seen[-1].cpu_s - seen[first].cpu_s) / (seen[-1].at - seen[first].at),
        profile=profile,
    )


def measure_restart(bootstrap: str, db: Path, interval_s: float) -> tuple[float, float, bool]:
    """The same command on the same database: process start -> first cycle line, and CPU until then."""
    child = CollectorChild(bootstrap, db, interval_s, scrape=False)
    try:
        child.watcher.wait_for(lambda w: w.cycles, WARMUP_TIMEOUT_S, "the first cycle")
        first = child.watcher.cycles[0]
        return first.at - child.started_at, first.cpu_s, first.from_tail
    finally:
        child.stop()


# ---------------------------------------------------------------- the peer


def kafka_cli_describe(bootstrap: str) -> tuple[float, float, int]:
    """`kafka-consumer-groups --describe --all-groups`: wall s, CPU s (JVM start included), group-partition rows."""
    from kafka_cli import CONSUMER_GROUPS, run_tool

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # archive=False: the JVM as Kafka's own script starts it
    out = run_tool(
        CONSUMER_GROUPS, "--bootstrap-server", bootstrap, "--describe", "--all-groups", timeout=1800, archive=False
    )
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    rows = sum(1 for line in out.splitlines() if line.strip() and not line.startswith(("GROUP", "Consumer group")))
    return elapsed, cpu, rows


# ---------------------------------------------------------------- the run and its table


def create_groups(bootstrap: str, groups: int, partitions: int) -> None:
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "monitor",
            "sim",
            "many-groups",
            "--bootstrap",
            bootstrap,
            "--groups",
            str(groups),
            "--partitions",
            str(partitions),
        ],
        cwd=ROOT,
        env=child_env(),
        check=True,
    )
    print(f"setup: {groups} groups x {partitions} partitions in {time.perf_counter() - started:.1f}s", flush=True)


def create_share_groups(bootstrap: str, count: int) -> None:
    """`count` share groups on one 3-partition topic, each of whose one member acknowledged a record."""
    from concurrent.futures import ThreadPoolExecutor

    from confluent_kafka import Producer, ShareConsumer
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

    started, topic = time.perf_counter(), "bench-share-topic"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    groups = [f"bench-share-{i}" for i in range(count)]
    earliest = [ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)]
    for future in admin.incremental_alter_configs(
        [ConfigResource("GROUP", g, incremental_configs=earliest) for g in groups]
    ).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(30):
        producer.produce(topic, b"job", partition=i % 3)
    producer.flush(30)

    def one(group: str) -> None:
        config = {"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit"}
        consumer = ShareConsumer({**config, "log_level": 3})
        consumer.subscribe([topic])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            records = [m for m in consumer.poll(0.5).records() if m.error() is None]
            for m in records:
                consumer.acknowledge(m)
            if records:
                consumer.commit_sync()
                break
        consumer.close()

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, groups))
    print(f"setup: {count} share groups in {time.perf_counter() - started:.1f}s", flush=True)


def create_streams_groups(bootstrap: str, count: int, tmp: Path) -> None:
    """`count` streams groups: one JVM runs that many LagmonStreams applications until all are RUNNING."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    started, words = time.perf_counter(), "bench-streams-words"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, 3, 1) for t in (words, "bench-streams-counts")]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(30):
        producer.produce(words, f"a b c {i}".encode(), partition=i % 3)
    producer.flush(30)
    props = tmp / "streams.properties"
    props.write_text(
        f"bootstrap.servers={bootstrap}\napplication.id=bench-streams\ninput.topic={words}\n"
        f"output.topic=bench-streams-counts\nstate.dir={tmp / 'streams-state'}\napp.instances={count}\n"
        "commit.interval.ms=1000\nnum.stream.threads=1\n"
    )
    libs = devcluster.LIBS_DIR
    app = subprocess.Popen(
        ["java", "-Xmx1g", "-cp", f"{libs}/*:{libs}/apps", "LagmonStreams", str(props)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    running, watchdog = 0, threading.Timer(300, app.kill)  # an app that never runs must not hang the bench
    watchdog.start()
    for line in app.stdout:
        running += line.rstrip().endswith("-> RUNNING")
        if running >= count:
            break
    watchdog.cancel()
    time.sleep(5)  # their first commits
    app.terminate()
    app.wait(120)
    print(f"setup: {count} streams groups in {time.perf_counter() - started:.1f}s ({running} ran)", flush=True)


def run_size(
    groups: int,
    partitions: int,
    interval_s: float,
    cases: list[str],
    cycles: int,
    peer: bool,
    share: int = 0,
    streams: int = 0,
):
    """One fresh cluster: the cases (a restart after (a)), then the peer; the cluster is destroyed whatever happens."""
    with tempfile.TemporaryDirectory(prefix="lagmon-bench-") as tmp:
        cluster = devcluster.start(Path(tmp) / "kafka")
        try:
            create_groups(cluster.bootstrap, groups, partitions)
            if share:
                create_share_groups(cluster.bootstrap, share)
            if streams:
                create_streams_groups(cluster.bootstrap, streams, Path(tmp))
            db, results = Path(tmp) / "x.db", []
            for case in cases:
                print(f"{groups * partitions:,} group-partitions, case ({case}) {CASE_NAMES[case]} ...", flush=True)
                result = run_case(cluster.bootstrap, db, groups, partitions, interval_s, case, cycles)
                if case == "a":
                    result.restart = measure_restart(cluster.bootstrap, db, interval_s)
                results.append(result)
            return results, kafka_cli_describe(cluster.bootstrap) if peer else None
        finally:
            devcluster.destroy(cluster.dir)


def target_for(result: CaseResult, measure: str) -> str:
    """'<= limit  met' / 'NOT met' for the issue's target on this size, case and measure ('' when none)."""
    for size, interval_s, case, name, limit, unit in TARGETS:
        if (size, interval_s, case, name) == (result.size, result.interval_s, result.case, measure):
            value = result.value(measure)
            return f"<= {limit:g} {unit}  {'met' if value is not None and value <= limit else 'NOT met'}"
    return ""


def spread(values: list[float], unit: str = "s", digits: int = 3) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.{digits}f} / {max(values):.{digits}f} {unit}".rstrip()


def print_size(results: list[CaseResult], peer: tuple[float, float, int] | None) -> None:
    def row(label: str, value: str, target: str = "") -> None:
        print(f"  {label:<54}{value:<26}{target}".rstrip())

    first = results[0]
    print(f"\n{first.size:,} group-partitions ({first.groups} groups x {first.partitions} partitions)")
    row("", "median / worst", "target (on the median)")

    for r in results:
        print(f" ({r.case}) {CASE_NAMES[r.case]}, {len(r.walls)} cycles of {r.seen_groups} groups")
        row("wall per cycle (main thread wakes -> cycle line)", spread(r.walls), target_for(r, "wall"))
        row("  the collector's own figure (its 'in X s')", spread(r.own))
        row(f"  gap between cycle lines (interval {r.interval_s:g} s)", spread(r.gaps))
        row("CPU-s per cycle (whole process, between lines)", spread(r.cpus, ""), target_for(r, "cpu"))
        row("CPU-s per second (whole process, all cycles)", f"{r.cpu_per_s:.3f}", target_for(r, "cpu_per_s"))
        row("peak RSS (VmHWM)", f"{r.rss_mb:.0f} MB", target_for(r, "rss"))
        if r.not_from_tail:
            row("cycles NOT taking offsets from the tail", f"{r.not_from_tail} of {len(r.walls)}")
        if r.failed or r.partial_errors:
            row("cycles failed / with partial errors", f"{r.failed} / {r.partial_errors} of {len(r.walls)}")
        if r.scrapes:
            row(
                f"/metrics scrapes ({len(r.scrapes)}): wall; child CPU meanwhile",
                f"{spread([s[0] for s in r.scrapes])}; {statistics.median(s[1] for s in r.scrapes):.2f} s",
            )
        if r.workload:
            w = r.workload
            kept_up = w["commits_per_s"] >= 0.95 * w["needed_per_s"]
            row(
                "workload: commits/s achieved of needed",
                f"{w['commits_per_s']:.0f} of {w['needed_per_s']}",
                "kept up" if kept_up else "WORKLOAD LAGGED: not every group committed each cycle",
            )
            row("  its late seconds, failed commits", f"{w['late_ticks']}, {w['failures']}")
        if r.profile:
            print_profile(r.profile)
        if r.restart:
            wall, cpu, from_tail = r.restart
            row("first cycle after a restart (process start -> line)", f"{wall:.2f} s", target_for(r, "restart"))
            row("  CPU-s from process start to that line", f"{cpu:.2f}")
            row("  its committed offsets from", "the tail" if from_tail else "OffsetFetch (tail not caught up)")
    if peer:
        wall, cpu, rows = peer
        print(
            f" peer: kafka-consumer-groups --describe --all-groups: {wall:.2f} s wall, {cpu:.2f} CPU-s "
            f"(JVM start included), {rows} rows"
        )
        for r in results:
            print(
                f"   vs lagmon ({r.case}) median cycle: the peer takes {wall / statistics.median(r.walls):.1f}x "
                f"the wall and {cpu / max(statistics.median(r.cpus), 1e-9):.1f}x the CPU"
            )


def print_profile(profile: Profile) -> None:
    """Each thread's CPU-s per second (/proc), and where a Python thread's samples were (py-spy)."""
    print(f"  where the CPU goes, over {PROFILE_S:g} s after the measured cycles (CPU-s per second; py-spy's samples)")
    for name, cpu in profile.threads:
        if cpu < 0.005:
            continue
        stages = profile.stages.get(name, [])
        said = ", ".join(f"{stage} {share:.0%}" for stage, share in stages if share >= 0.02)
        print(f"    {name:<36}{cpu:6.3f}" + (f"  {said}" if said else ""))


def describe_machine() -> str:
    """The interpreter the collector runs on (version, optimised build or not) and the machine's pace on a
    fixed loop: figures from different machines compare only beside these."""
    probe = (
        "import platform, sys, sysconfig, time\n"
        "args = sysconfig.get_config_var('CONFIG_ARGS') or ''\n"
        "opt = 'an optimised build' if '--enable-optimizations' in args else 'configure args without "
        "--enable-optimizations (a distribution may still build it with PGO, as Debian does)'\n"
        f"t = time.perf_counter()\n{REFERENCE_LOOP}\n"
        "print(f'Python {platform.python_version()} ({sys.executable}), {opt}; '\n"
        "      f'reference loop (10 M additions) {time.perf_counter() - t:.2f} s')"
    )
    said = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    return f"machine: {platform.machine()}, {os.cpu_count()} cores; {said}"


def _interrupted(*_) -> None:
    raise KeyboardInterrupt  # so SIGTERM runs every finally: children stopped, clusters destroyed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", default="1000,5000", help="comma list: one size each, x --partitions")
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--cycles", type=int, default=20, help="measured cycles per case, after warm-up")
    parser.add_argument("--cases", default="a,b", help="a: nothing changing, b: every group commits each interval")
    parser.add_argument(
        "--interval", type=float, default=1.0, help="collect --interval, and how often (b) commits every group (s)"
    )
    parser.add_argument("--skip-peer", action="store_true", help="do not run kafka-consumer-groups")
    parser.add_argument("--share-groups", type=int, default=0, help="add this many share groups (KIP-932)")
    parser.add_argument("--streams-groups", type=int, default=0, help="add this many streams groups (KIP-1071)")
    args = parser.parse_args()
    sizes = [int(g) for g in args.groups.split(",")]
    cases = [c.strip() for c in args.cases.split(",")]
    if not set(cases) <= set(CASE_NAMES):
        parser.error(f"--cases: choose from {','.join(CASE_NAMES)}")
    signal.signal(signal.SIGTERM, _interrupted)
    print(describe_machine(), flush=True)
    runs = []
    try:
        for groups in sizes:
            runs.append(
                run_size(
                    groups,
                    args.partitions,
                    args.interval,
                    cases,
                    args.cycles,
                    not args.skip_peer,
                    args.share_groups,
                    args.streams_groups,
                )
            )
    finally:  # the sizes done so far, even when a later one failed or was interrupted
        print(
            f"\nlagmon `collect --interval {args.interval:g}s --metrics-port N`, offsets-topic tail on, default "
            f"alert rules, /metrics scraped every {SCRAPE_EVERY_S:g} s; measured from outside the process"
        )
        for results, peer in runs:
            print_size(results, peer)


if __name__ == "__main__":
    main()
