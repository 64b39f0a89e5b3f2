"""Lag in seconds against the truth, per traffic shape, on a real Kafka (docs/health.md, "How close").

Each shape is a topic with a producer of a known rate over time and a commit-only
group (never a member: it only commits) that trails it in a known way. The harness
remembers when each record was appended: the broker's timestamp on a LogAppendTime
topic; on a CreateTime topic, between when the producer sent it (its own clock,
whatever CreateTime the record carries) and when it heard back, as a loaded
machine may keep a record in the producer's queue for a while. So at every
collector sample the truth is: sample time - when the record at the committed
offset was appended (0 when caught up), known within [low, high]. lagmon's
collectors watch all shapes at once, as `collect` runs them; `measure` returns
every sample's (truth, lagmon's answer) for each collector and shape.

Shared by bench/bench_lag_seconds.py (the full table, with peers) and
tests/integration/test_lag_truth.py (a short run, one test per shape).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, Producer
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient, NewTopic

from monitor.alerts.rules import parse_rules
from monitor.collector import Collector
from monitor.health import HealthEngine, HealthStage
from monitor.kafka import KafkaSampler, RecordTimestampReader
from monitor.lag import LagClock, TimeLag
from monitor.models import TopicPartition
from monitor.store import Store, make_engine, upgrade

SKEW_MS = 3_600_000  # the skewed producer stamps its records an hour in the past
# an answer counts as paced when its bracket is at most this many intervals wide (a cycle's times jitter by
# its sampling time) and both of its log ends were read within this many intervals of their cycle's start
PACED_BRACKETS, PROMPT_READ = 1.5, 0.5
PREFILL_S = 5.0  # records produced before the collectors start: older than their history
COMPACTED = {  # compacted within seconds: a segment a second, cleaned as soon as the cleaner looks
    "cleanup.policy": "compact",
    "segment.ms": "1000",
    "min.cleanable.dirty.ratio": "0.01",
    "min.compaction.lag.ms": "0",
    "message.timestamp.type": "LogAppendTime",
}


@dataclass(frozen=True)
class Shape:
    """A producer's rate and a consumer's delay, each a function of seconds since the start."""

    name: str
    rate: Callable[[float], float]  # records per second
    delay: Callable[[float], float | None]  # the consumer commits what was appended this long ago; None: it stalls
    topic_config: dict = field(default_factory=dict)
    skewed: bool = False  # records carry a CreateTime an hour before they were produced
    reset_at: float | None = None  # seconds: the consumer goes back to the log start and replays
    keys: int = 0  # records carry one of this many keys (a compacted topic needs them); 0: no key
    why: str = ""


def _steady(_t: float) -> float:
    return 50.0


def _bursty(t: float) -> float:
    return 250.0 if t % 10 < 2 else 0.0  # 10x the mean rate for 2 s, then silence for 8


def _slowing(t: float) -> float:
    return max(2.0, 200.0 * 0.5 ** (t / 10))  # halves every 10 s


def _idle_then_burst(t: float) -> float:
    return 300.0 if t % 30 < 1 else 0.0  # a 1 s burst every 30 s


def _lagging(_t: float) -> float:
    return 8.0


def _stalling(t: float) -> float | None:
    # stops committing for 15 s of every 40, from 20 s: its committed record, appended at 12 s, is then within the
    # collectors' history (they start at PREFILL_S), so a stall is answered with values, not a bound
    return None if 20 <= t % 40 < 35 else 8.0


SHAPES = {
    s.name: s
    for s in (
        Shape("steady", _steady, _lagging, why="50 records/s; the consumer trails 8 s"),
        Shape("bursty", _bursty, _lagging, why="250/s for 2 s then 8 s of silence"),
        Shape("slowing", _slowing, _lagging, why="200/s halving every 10 s"),
        Shape("idle-then-burst", _idle_then_burst, _lagging, why="a 1 s burst of 300/s every 30 s"),
        Shape("stalling", _steady, _stalling, why="50/s; the consumer stops for 15 s of every 40"),
        Shape("reset", _steady, _lagging, reset_at=20.0, why="at 20 s the consumer goes back to the log start"),
        Shape("create-time-skew", _steady, _lagging, skewed=True, why="CreateTime an hour before the send"),
        Shape(
            "compacted",
            _steady,
            _lagging,
            topic_config=COMPACTED,
            keys=10,
            why="50/s over 10 keys on a compacted LogAppendTime topic: the record at the commit is soon gone",
        ),
        Shape(
            "log-append-time",
            _bursty,
            _lagging,
            topic_config={"message.timestamp.type": "LogAppendTime"},
            why="bursty, on a topic whose records carry the broker's append time",
        ),
    )
}


@dataclass(frozen=True)
class Sample:
    at: int  # the collector's sample time (ms)
    truth: float  # seconds, at least (since the producer heard the record was appended)
    truth_high: float  # seconds, at most (since the producer sent it)
    lag: TimeLag | None  # lagmon's answer
    slack: float  # seconds: a sample's log ends are read up to its sampling time after its time, and the
    # answer's bracket may come from any earlier sample: the longest sampling time so far
    peer: float | None = None  # a peer's answer over the same log-end table (bench_lag_seconds)
    bracket: float | None = None  # seconds between the two log-end points the answer lies between (None: no
    # bracket): one interval where the collector kept its pace, more where a cycle came late
    read_within: float = 0.0  # seconds: the longer sampling time of the two cycles that read those log ends (a
    # point is stamped at its cycle's end, and may have been read that much earlier)

    def paced(self, interval: float) -> bool:
        """The collector kept its pace where this answer came from: its bracket is about one interval wide
        and both of its log ends were read promptly."""
        if self.bracket is None:
            return True
        return self.bracket <= PACED_BRACKETS * interval and self.read_within <= PROMPT_READ * interval

    def miss(self, seconds: float) -> float:
        """How far `seconds` lies outside what the truth can be."""
        return max(0.0, self.truth - seconds, seconds - self.truth_high)


class ShapeRun:
    """One shape's producer and committer on its own topic and group."""

    def __init__(self, shape: Shape, bootstrap: str, topic: str, group: str):
        self.shape, self.bootstrap, self.topic, self.group = shape, bootstrap, topic, group
        self.appended: list[int] = []  # appended[offset]: when the record was appended at the latest (ms; 0: unknown)
        self.sent: list[int] = []  # sent[offset]: when it was appended at the earliest
        self.started = time.time()

    def produce(self, stop: threading.Event) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 0, "enable.idempotence": True})
        owed, last, sent = 0.0, time.time(), 0
        while not stop.is_set():
            now = time.time()
            owed += self.shape.rate(now - self.started) * (now - last)
            last = now
            while owed >= 1:
                owed -= 1
                stamp = int(time.time() * 1000) - (SKEW_MS if self.shape.skewed else 0)
                key = str(sent % self.shape.keys).encode() if self.shape.keys else None
                producer.produce(self.topic, b"x", key, partition=0, timestamp=stamp, on_delivery=self._delivered)
                sent += 1
            producer.poll(0.02)
        producer.flush(30)

    def _delivered(self, err, msg) -> None:
        if err is not None:
            return
        kind, stamp = msg.timestamp()
        if kind == TIMESTAMP_LOG_APPEND_TIME:
            sent = heard = stamp
        else:
            sent, heard = stamp + (SKEW_MS if self.shape.skewed else 0), int(time.time() * 1000)
        offset, appended = msg.offset(), self.appended
        if offset >= len(appended):
            appended.extend([0] * (offset + 1 - len(appended)))
            self.sent.extend([0] * (offset + 1 - len(self.sent)))
        appended[offset], self.sent[offset] = heard, sent

    def commit(self, stop: threading.Event) -> None:
        """Commit, once a second, the offset past the newest record appended `delay` ago; replay after a reset."""
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group, "enable.auto.commit": False})
        replay_from = None
        try:
            while not stop.wait(1.0):
                elapsed = time.time() - self.started
                if self.shape.reset_at is not None and elapsed >= self.shape.reset_at and replay_from is None:
                    replay_from = time.time()
                if replay_from is not None:  # reading the backlog from offset 0 at 100 records/s
                    offset = min(len(self.appended), int((time.time() - replay_from) * 100))
                else:
                    delay = self.shape.delay(elapsed)
                    if delay is None:
                        continue
                    offset = bisect_right(self.appended, int((time.time() - delay) * 1000))
                with contextlib.suppress(Exception):
                    consumer.commit(offsets=[KTP(self.topic, 0, offset)], asynchronous=False)
        finally:
            consumer.close()

    def log_end_at(self, at: int) -> int:
        """The log end at `at` as far as the producer knows (delivery reports come in offset order)."""
        return bisect_right(self.appended, at)

    def truth(self, committed: int, log_end: int, at: int) -> tuple[float, float] | None:
        """Seconds the record at `committed` has waited at `at`, at least and at most; None when not known."""
        if committed >= log_end:
            return 0.0, 0.0
        if committed >= len(self.appended) or self.appended[committed] == 0:
            return None
        return max(0.0, (at - self.appended[committed]) / 1000), max(0.0, (at - self.sent[committed]) / 1000)


Peer = Callable[[int, list[tuple[int, int]], int], float]  # (committed, [(log_end, at)], now) -> seconds


class Recorder:
    """A collector observer after the health step: each shape's truth beside the engine's answer (and a peer's)."""

    def __init__(self, runs: dict[str, ShapeRun], peer: Peer | None = None):
        self.by_group = {run.group: run for run in runs.values()}
        self.samples: dict[str, list[Sample]] = {name: [] for name in runs}
        self.peer, self.tables = peer, {name: [] for name in runs}
        self.longest_sampling_ms = 0
        self.sampling_ms: dict[int, int] = {}

    def __call__(self, result, snapshot, report):
        if snapshot is None or report is None:
            return
        self.longest_sampling_ms = max(self.longest_sampling_ms, snapshot.duration_ms)
        self.sampling_ms[snapshot.log_ends_at] = snapshot.duration_ms  # the log-end points' times
        for group, run in self.by_group.items():
            gh = report.groups.get(group)
            tp = TopicPartition(run.topic, 0)
            offsets = snapshot.partitions.get(tp)
            health = None if gh is None else next((p for p in gh.partitions if p.tp == tp), None)
            if offsets is not None:
                self.tables[run.shape.name].append((offsets.log_end, snapshot.taken_at))
            if health is None or health.committed is None or offsets is None:
                continue
            truth = run.truth(health.committed, offsets.log_end, snapshot.taken_at)
            if truth is not None:
                lag = None if health.clock is None else health.clock.at(snapshot.taken_at)
                peer = self.peer and self.peer(health.committed, self.tables[run.shape.name], snapshot.taken_at)
                sample = Sample(
                    snapshot.taken_at, *truth, lag, self.longest_sampling_ms / 1000, peer, *self.bracket(health.clock)
                )
                self.samples[run.shape.name].append(sample)

    def bracket(self, clock: LagClock | None) -> tuple[float | None, float]:
        """(width, read within) of the log-end bracket a clock interpolated in, in seconds (None: no bracket)."""
        if clock is None or clock.earliest is None:
            return None, 0.0
        ends = (self.sampling_ms.get(int(t), self.longest_sampling_ms) for t in (clock.earliest, clock.latest))
        return (clock.latest - clock.earliest) / 1000, max(ends) / 1000


def topic_name(shape: Shape, suffix: str) -> str:
    return f"lag-truth-{shape.name}-{suffix}"


def count_records(bootstrap: str, topic: str) -> tuple[int, int]:
    """(records left, log end) of a one-partition topic: fewer records than offsets once compaction ran."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-counter", "enable.auto.commit": False})
    try:
        _, end = consumer.get_watermark_offsets(KTP(topic, 0), timeout=10)
        consumer.assign([KTP(topic, 0, 0)])
        left, last, deadline = 0, -1, time.monotonic() + 30
        while last < end - 1 and time.monotonic() < deadline:
            for msg in consumer.consume(500, timeout=0.5):
                if msg.error() is None:
                    left, last = left + 1, msg.offset()
        return left, end
    finally:
        consumer.close()


def measure(
    bootstrap: str,
    workdir: Path,
    shapes: list[Shape],
    seconds: float,
    collectors: dict[str, tuple[float, int]],
    suffix: str,
    peer: Peer | None = None,
    beside: Callable[[dict[str, ShapeRun], threading.Event], None] | None = None,
) -> dict[str, dict[str, list[Sample]]]:
    """Run `shapes` for `seconds` while each collector (label -> (interval s, exact top K)) watches them all;
    `peer` answers too, over each collector's log-end table. `beside(runs, stop)` runs in a thread of its own
    from the start (a peer process watching the same topics, until `stop` is set)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    runs = {s.name: ShapeRun(s, bootstrap, topic_name(s, suffix), f"{topic_name(s, suffix)}-group") for s in shapes}
    futures = admin.create_topics([NewTopic(r.topic, 1, config=r.shape.topic_config) for r in runs.values()])
    for f in futures.values():
        f.result(30)
    stop_producing, stop_watching = threading.Event(), threading.Event()
    workers = [threading.Thread(target=r.produce, args=(stop_producing,), daemon=True) for r in runs.values()]
    workers += [threading.Thread(target=r.commit, args=(stop_producing,), daemon=True) for r in runs.values()]
    if beside is not None:
        workers.append(threading.Thread(target=beside, args=(runs, stop_watching), daemon=True))
    for w in workers:
        w.start()
    time.sleep(PREFILL_S)
    groups = {r.group for r in runs.values()}
    recorders, threads, closers = {}, [], []
    rules = parse_rules("rules: []\n", "lag-truth.yaml")
    for label, (interval, exact_top) in collectors.items():
        url = f"sqlite:///{workdir / f'lag-truth-{label}.db'}"
        upgrade(url)
        engine = make_engine(url)
        reader = RecordTimestampReader({"bootstrap.servers": bootstrap}) if exact_top else None
        judge = HealthEngine("lag-truth", rules.evaluator, exact_reader=reader, exact_top=exact_top)
        sampler = KafkaSampler({"bootstrap.servers": bootstrap}, "lag-truth", wants_group=groups.__contains__)
        recorders[label] = Recorder(runs, peer)
        collector = Collector(
            sampler, Store(engine), "lag-truth", health=HealthStage(engine, judge), observers=[recorders[label]]
        )
        threads.append(threading.Thread(target=collector.run, args=(interval, stop_watching), daemon=True))
        closers += [sampler.close] + ([reader.close] if reader is not None else [])
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop_watching.set()
    stop_producing.set()
    for t in threads + workers:
        t.join(30)
    for close in closers:
        close()
    return {label: rec.samples for label, rec in recorders.items()}


@dataclass(frozen=True)
class Score:
    """How lagmon's answers for one shape compare with the truth."""

    values: int  # samples answered with a value (exact or interpolated)
    bounds: int  # samples answered with a lower bound
    unanswered: int
    p50: float  # absolute error of the values, seconds
    p95: float
    max: float
    outside: int  # values further from the truth than their stated error (+ the sample's slack)
    bounds_broken: int  # bounds above the truth (+ the sample's slack)
    exact: int  # values read from the record's own timestamp


def score(samples: list[Sample]) -> Score:
    values = [s for s in samples if s.lag is not None and not s.lag.at_least]
    bounds = [s for s in samples if s.lag is not None and s.lag.at_least]
    errors = sorted(s.miss(s.lag.seconds) for s in values)

    def pick(q: float) -> float:
        return errors[min(len(errors) - 1, math.ceil(len(errors) * q) - 1)] if errors else math.nan

    return Score(
        len(values),
        len(bounds),
        sum(1 for s in samples if s.lag is None),
        pick(0.5),
        pick(0.95),
        errors[-1] if errors else math.nan,
        sum(1 for s in values if s.miss(s.lag.seconds) > s.lag.error + s.slack),
        sum(1 for s in bounds if s.lag.seconds > s.truth_high + s.slack),
        sum(1 for s in values if s.lag.exact),
    )
