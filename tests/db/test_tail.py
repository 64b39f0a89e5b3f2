"""OffsetsTail (monitor/tail.py) on a real SQLite store, fed by scripted readers: exact offsets, restarts after
errors without storing twice, catching up, pausing for the cycle, turning itself off when refused, the exporter."""

from __future__ import annotations

import threading
import time

import pytest
from ports_check import misfits

from monitor.models import KafkaUnavailable, NotAuthorized
from monitor.store.offsets_tail import read_commits, read_tail_positions

HOUR = 3_600_000
NOW = 1_000 * HOUR


class FakeReader:
    """Stands in for monitor.kafka.OffsetsTopicReader: one partition holding `records`, read in batches of 2."""

    def __init__(self, records, fail_after: int | None = None):
        self.records, self.pos, self.fail_after, self.partitions = records, 0, fail_after, [0]

    def open(self, start, only=None):
        return self.partitions

    def fetch_ends(self):
        return {0: len(self.records)}

    def fetch_batch(self, max_records, timeout_s):
        if self.fail_after is not None and self.pos >= self.fail_after:
            self.fail_after = None
            raise RuntimeError("broker went away")
        batch = self.records[self.pos : self.pos + 2]
        self.pos += len(batch)
        if not batch:
            time.sleep(0.01)
        return batch, ({0: self.pos} if self.pos == len(self.records) else {}), []

    def close(self):
        pass


def rec(offset, value):
    """Group g's commit of `value` on t-0, as record `offset` of __consumer_offsets partition 0."""
    from kafka_wire import i16, i32, i64, s16

    from monitor.offsets_topic.history import TailRecord

    key = i16(1) + s16("g") + s16("t") + i32(0)
    return TailRecord(0, offset, NOW - 1000 + offset, key, i16(3) + i64(value) + i32(-1) + s16("") + i64(offset))


def wait_caught_up(tail, ends: dict[int, int]) -> None:
    """Read up to `ends`, and the session says it has caught up (so it answers the sampler)."""
    assert tail.wait_until_read(ends, 10)
    deadline = time.monotonic() + 10
    while tail.caught_up_at is None and time.monotonic() < deadline:
        time.sleep(0.01)


def tail_lines(caplog) -> list[str]:
    """What the tail logged (lagmon.tail), from any thread."""
    return [r.getMessage() for r in caplog.records if r.name == "lagmon.tail"]


def test_the_tail_thread_feeds_exact_offsets_restarts_after_errors_and_stores_nothing_twice(sqlite_store, caplog):
    from monitor.tail import OffsetsTail

    records = [rec(o, 10 * o) for o in range(6)]
    readers = iter([FakeReader(records, fail_after=4), FakeReader(records), FakeReader([*records, rec(6, 99)])])
    tail = OffsetsTail(lambda: next(readers), sqlite_store, "c", span_ms=HOUR, mode="on", now_ms=lambda: NOW)
    stop = threading.Event()
    thread = tail.start(stop)
    try:
        wait_caught_up(tail, {0: 6})
        assert tail.committed_when_caught_up({0: 6}, ["g", "x"]) == {"g": {("t", 0): 50}, "x": {}}
        assert tail.committed_when_caught_up({0: 7}, ["g"], wait_s=0.05) is None  # not read that far
    finally:
        stop.set()
        thread.join(timeout=10)
    assert any("broker went away" in line for line in tail_lines(caplog)), tail_lines(caplog)
    assert [c.offset for c in read_commits(sqlite_store.engine, "c", "g")] == [0, 10, 20, 30, 40, 50]
    # a restart (third reader) replays all six, stores only the seventh
    stop = threading.Event()
    tail = OffsetsTail(lambda: next(readers), sqlite_store, "c", span_ms=HOUR, now_ms=lambda: NOW)
    thread = tail.start(stop)
    try:
        assert tail.wait_until_read({0: 7}, 10)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert [c.offset for c in read_commits(sqlite_store.engine, "c", "g")] == [0, 10, 20, 30, 40, 50, 99]
    assert read_tail_positions(sqlite_store.engine, "c") == {0: 7}


class BusyReader(FakeReader):
    """A busy cluster: after its end (EOF) every batch brings a new commit, so none is ever empty."""

    def fetch_batch(self, max_records, timeout_s):
        if self.pos >= len(self.records):
            self.records.append(rec(len(self.records), 1))
            time.sleep(0.01)
        return super().fetch_batch(max_records, timeout_s)


def test_a_busy_clusters_tail_catches_up_once_every_partition_reached_its_end(sqlite_store):
    from monitor.tail import OffsetsTail

    tail = OffsetsTail(lambda: BusyReader([rec(o, o) for o in range(6)]), sqlite_store, "c", span_ms=HOUR, mode="on")
    stop = threading.Event()
    thread = tail.start(stop)
    try:
        wait_caught_up(tail, {0: 6})
        assert tail.caught_up_at is not None  # share and streams groups are only answered after this
    finally:
        stop.set()
        thread.join(timeout=10)


def test_the_tail_decodes_nothing_while_the_cycle_it_answered_runs(sqlite_store):
    """The rest of that cycle has the interpreter to itself: until resume(), or PAUSE_MAX_S at most."""
    from monitor.tail import PAUSE_MAX_S, OffsetsTail

    records = [rec(0, 0), rec(1, 10)]
    tail = OffsetsTail(lambda: FakeReader(records), sqlite_store, "c", span_ms=HOUR, mode="on", now_ms=lambda: NOW)
    stop = threading.Event()
    thread = tail.start(stop)
    try:
        wait_caught_up(tail, {0: 2})
        assert tail.committed_when_caught_up({0: 2}, ["g"]) == {"g": {("t", 0): 10}}
        records.append(rec(2, 20))
        assert not tail.wait_until_read({0: 3}, 0.5)
        tail.resume()
        assert tail.wait_until_read({0: 3}, 1)
        assert tail.committed_when_caught_up({0: 3}, ["g"]) == {"g": {("t", 0): 20}}
        answered = time.monotonic()
        records.append(rec(3, 30))  # and the cycle never says it is done
        assert tail.wait_until_read({0: 4}, PAUSE_MAX_S + 5)
        assert time.monotonic() - answered >= PAUSE_MAX_S - 0.1
    finally:
        stop.set()
        thread.join(timeout=10)


class RefusedReader(FakeReader):
    """A reader whose open() fails as the Kafka edge reports it."""

    def __init__(self, error: Exception):
        super().__init__([])
        self.error = error

    def open(self, start, only=None):
        raise self.error


REFUSED = "cannot read __consumer_offsets: Broker: Topic authorization failed"


@pytest.mark.parametrize(
    "mode, error, turned_off",
    [
        ("auto", NotAuthorized(REFUSED), True),
        ("on", NotAuthorized(REFUSED), False),  # asked for: keep trying until someone grants Read
        (
            "auto",
            KafkaUnavailable("cannot read __consumer_offsets: authorization server down"),
            False,
        ),  # the type decides
    ],
)
def test_without_read_on_the_offsets_topic_the_tail_turns_itself_off_in_auto_mode_only(
    sqlite_store, mode, error, turned_off, caplog
):
    from monitor.tail import OffsetsTail

    tail = OffsetsTail(
        lambda: RefusedReader(error),
        sqlite_store,
        "c",
        span_ms=HOUR,
        mode=mode,
        now_ms=lambda: NOW,
    )
    stop = threading.Event()
    thread = tail.start(stop)
    try:
        deadline = time.monotonic() + 10
        while not tail_lines(caplog) and time.monotonic() < deadline:
            time.sleep(0.01)
        thread.join(5 if turned_off else 0.2)
        assert thread.is_alive() is not turned_off  # turned off, the thread ends by itself
    finally:
        stop.set()
        thread.join(timeout=10)
    assert tail.disabled is turned_off
    assert all(r.levelname == "WARNING" for r in caplog.records if r.name == "lagmon.tail")
    if turned_off:
        assert tail_lines(caplog) == [
            f"offsets-topic tail off: {error} (needs Read on __consumer_offsets; "
            "LAGMON_OFFSETS_TOPIC=off silences this)"
        ]
    else:
        assert tail_lines(caplog) == [f"offsets-topic tail: {error} (retrying)"]


def test_the_fake_reader_is_an_offsets_reader():
    from monitor.tail import OffsetsReader

    assert misfits(FakeReader([]), OffsetsReader) == []


def commit_at(offset: int, topic: str, committed_at: int | None):
    """Group g's commit on `topic`-0 made at `committed_at` (None: a tombstone), as record `offset` of partition 0."""
    from kafka_wire import i16, i32, i64, s16

    from monitor.offsets_topic.history import TailRecord

    key = i16(1) + s16("g") + s16(topic) + i32(0)
    value = None if committed_at is None else i16(3) + i64(offset) + i32(-1) + s16("") + i64(committed_at)
    return TailRecord(0, offset, NOW if committed_at is None else committed_at, key, value)


def test_commits_the_tail_reads_reach_the_exporter_through_the_cycle_each_once(sqlite_store):
    """Counted from the tail's start, of the wanted topics, tombstones not; a replay after a restart counts nothing
    twice; each cycle takes what the tail counted since the last and hands it to its observers in its CycleResult."""
    from monitor.collector import Collector
    from monitor.exporter import MetricsExporter
    from monitor.models import ClusterSnapshot
    from monitor.tail import OffsetsTail

    records = [
        commit_at(0, "t", NOW - 5000),  # before the tail started: in the store, not in the counter
        commit_at(1, "t", NOW + 1000),
        commit_at(2, "t", NOW + 2000),
        commit_at(3, "left-out", NOW + 2000),
        commit_at(4, "t", None),  # the offset expired: no commit
        commit_at(5, "t", NOW + 3000),
    ]

    def tail_on(reader_records) -> OffsetsTail:
        """A tail that has read `reader_records` and stopped (so it counted all it read)."""
        tail = OffsetsTail(
            lambda: FakeReader(reader_records),
            sqlite_store,
            "c",
            span_ms=HOUR,
            mode="on",
            now_ms=lambda: NOW,
            counts_commits=lambda group, topic: topic != "left-out",
        )
        stop = threading.Event()
        thread = tail.start(stop)
        assert tail.wait_until_read({0: len(reader_records)}, 10)
        stop.set()
        thread.join(timeout=10)
        return tail

    tail = tail_on(records)
    assert tail.take_commit_counts() == {("g", "t"): 3}
    assert tail.take_commit_counts() == {}  # taken
    restarted = tail_on([*records, commit_at(6, "t", NOW + 4000), commit_at(7, "t", NOW + 4000)])
    assert restarted.take_commit_counts() == {("g", "t"): 2}  # the six read again are in the store already

    class NoGroups:
        def fetch_snapshot(self, now_ms):
            return ClusterSnapshot("c", NOW, {}, {})

    exporter = MetricsExporter("c")
    collector = Collector(NoGroups(), sqlite_store, "c", now_ms=lambda: NOW, tail=tail, observers=[exporter])
    tail._commit_counts.update({("g", "t"): 4, ("h", "u"): 1})  # what the thread would have counted meanwhile
    assert collector.poll_once().offset_commits == (("g", "t", 4), ("h", "u", 1))
    tail._commit_counts.update({("g", "t"): 2})
    assert collector.poll_once().offset_commits == (("g", "t", 2),)
    assert collector.poll_once().offset_commits == ()
    lines = [line for line in exporter.exposition() if line.startswith("lagmon_consumergroup_offset_commits_total")]
    assert lines == [
        'lagmon_consumergroup_offset_commits_total{cluster_name="c",group="g",topic="t"} 6\n',
        'lagmon_consumergroup_offset_commits_total{cluster_name="c",group="h",topic="u"} 1\n',
    ]


def test_a_cycle_without_end_offsets_gets_the_offsets_as_far_as_a_caught_up_tail_has_read(sqlite_store):
    """Kafka did not answer __consumer_offsets' end offsets (a leader moving): the cycle takes the tail's
    offsets as read rather than OffsetFetch, once the tail has caught up, and the tail pauses as for any answer."""
    from monitor.tail import OffsetsTail

    records = [rec(o, 10 * o) for o in range(3)]
    tail = OffsetsTail(lambda: FakeReader(records), sqlite_store, "c", span_ms=HOUR, mode="on", now_ms=lambda: NOW)
    assert tail.committed_as_read(["g"]) is None  # no session has read anything
    stop = threading.Event()
    thread = tail.start(stop)
    try:
        wait_caught_up(tail, {0: 3})
        assert tail.committed_as_read(["g", "x"]) == {"g": {("t", 0): 20}, "x": {}}
        records.append(rec(3, 30))
        assert not tail.wait_until_read({0: 4}, 0.5)  # paused for the cycle
        tail.resume()
        assert tail.wait_until_read({0: 4}, 1)
    finally:
        stop.set()
        thread.join(timeout=10)
