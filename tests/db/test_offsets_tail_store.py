"""monitor.store.offsets_tail against real SQLite: positions with the data, rollups, one row per rebalance."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest
from ports_check import misfits

from monitor.models import KafkaUnavailable, MemberRef, NotAuthorized, Rebalance, Trigger
from monitor.offsets_topic.history import (
    CommitRow,
    GenerationMember,
    GenerationRow,
    TailRecord,
    TailState,
    TailUpdate,
)
from monitor.store import RetentionPolicy, apply_retention, read_rebalances
from monitor.store.offsets_tail import (
    TailPosition,
    read_commits,
    read_generations,
    read_tail_positions,
    read_tail_status,
    write_tail_update,
)

HOUR, MINUTE = 3_600_000, 60_000
NOW = 1_000 * HOUR


def test_a_batch_and_its_positions_are_stored_together(sqlite_store):
    member = GenerationMember("m-1", None, "c1", "h1")
    update = TailUpdate(
        commits=[CommitRow("g", "t", 0, 5, 100, 3), CommitRow("g", "t", 0, -1, 200)],
        generations=[GenerationRow("g", "generation", 4, 150, "consumer", "range", "m-1", (member,))],
        positions={0: 17, 3: 2},
    )
    write_tail_update(sqlite_store, "c", update, NOW)
    assert read_tail_positions(sqlite_store.engine, "c") == {0: 17, 3: 2}
    assert [(c.offset, c.committed_at, c.leader_epoch) for c in read_commits(sqlite_store.engine, "c", "g")] == [
        (5, 100, 3),
        (None, 200, None),
    ]
    (gen,) = read_generations(sqlite_store.engine, "c", "g")
    assert (gen["epoch"], gen["members"]) == (
        4,
        [{"member_id": "m-1", "instance_id": None, "client_id": "c1", "host": "h1", "assignment": []}],
    )
    write_tail_update(sqlite_store, "c", TailUpdate(positions={0: 20}), NOW + MINUTE)
    assert read_tail_positions(sqlite_store.engine, "c") == {0: 20, 3: 2}
    # the Health page's view: when each partition last moved; nothing for a cluster without a tail
    assert read_tail_status(sqlite_store.engine, "c") == [TailPosition(0, 20, NOW + MINUTE), TailPosition(3, 2, NOW)]
    assert read_tail_status(sqlite_store.engine, "other") == []


def test_records_the_tail_cannot_read_are_counted_once_with_the_newest_reason(sqlite_store):
    """Two undecodable records on partition 3, stored with the position; read again after a restart
    (below the stored position) they are not counted again."""
    garbage = [TailRecord(3, offset, NOW, b"\x00\x01\x00\x05ab", b"\xff") for offset in (7, 9)]
    update = TailState({3: 5}).apply(garbage)
    assert (update.failed, update.positions) == (2, {3: 10})
    write_tail_update(sqlite_store, "c", update, NOW)
    [position] = read_tail_status(sqlite_store.engine, "c")
    assert position.skipped == 2 and position.last_skipped.startswith("__consumer_offsets-3 offset 9: ")
    again = TailState({3: 10}).apply(garbage)
    assert again.failed == 2 and again.failures == {}
    write_tail_update(sqlite_store, "c", TailUpdate(positions={3: 12}, failures={3: (1, "offset 11: x")}), NOW)
    assert [(p.skipped, p.last_skipped) for p in read_tail_status(sqlite_store.engine, "c")] == [(3, "offset 11: x")]


def test_commits_roll_up_with_age_like_the_samples(sqlite_store):
    policy = RetentionPolicy(raw_ms=HOUR, minute_ms=2 * HOUR, ten_minute_ms=3 * HOUR, pause_ms=0)
    times = {
        "raw": [NOW - 10 * MINUTE + s * 1000 for s in range(0, 30, 10)],  # kept as they are
        "minute": [NOW - 90 * MINUTE + s * 1000 for s in range(0, 120, 20)],  # 2 minutes -> the last of each
        "ten": [NOW - 150 * MINUTE + m * MINUTE for m in range(0, 20, 3)],  # 20 minutes -> the last of each 10
        "gone": [NOW - 200 * MINUTE],
    }
    ordered = sorted(t for ts in times.values() for t in ts)
    commits = [CommitRow("g", "t", p, i, at + p) for i, at in enumerate(ordered) for p in (0, 1)]  # 1 ms apart
    write_tail_update(sqlite_store, "c", TailUpdate(commits=commits), NOW)
    apply_retention(sqlite_store.engine, "c", NOW, policy)
    kept = [c.committed_at for c in read_commits(sqlite_store.engine, "c", "g", "t", 0)]
    assert [
        c.committed_at - 1 for c in read_commits(sqlite_store.engine, "c", "g", "t", 1)
    ] == kept  # each its own last
    minute_last = [
        max(t for t in times["minute"] if t // MINUTE == b) for b in sorted({t // MINUTE for t in times["minute"]})
    ]
    ten_last = [
        max(t for t in times["ten"] if t // (10 * MINUTE) == b)
        for b in sorted({t // (10 * MINUTE) for t in times["ten"]})
    ]
    assert kept == sorted(ten_last + minute_last + times["raw"])


def polled(start, end, trigger=Trigger.MEMBER_JOINED):
    return Rebalance("g", start, end, "eager", trigger, 1, 2, joined=(MemberRef("m2", "c2", "h"),), partitions_moved=3)


def tailed(before, after, start, end, protocol="eager"):
    return Rebalance(
        "g",
        start,
        end,
        protocol,
        Trigger.MEMBER_JOINED,
        1,
        2,
        joined=(MemberRef("m2", "c2", "h"),),
        partitions_moved=2,
        generation_before=before,
        generation_after=after,
        source="offsets_topic",
    )


def test_a_polled_rebalance_then_the_tail_is_one_row_with_exact_numbers(sqlite_store):
    sqlite_store.write_rebalances("c", [polled(10_000, None)])  # seen starting
    write_tail_update(sqlite_store, "c", TailUpdate(rebalances=[tailed(4, 5, 13_500, 13_500)]), NOW)
    sqlite_store.write_rebalances("c", [polled(10_000, 20_000)])  # seen settled
    (row,) = [r.rebalance for r in read_rebalances(sqlite_store.engine, "c")]
    assert (row.started_at, row.ended_at, row.generation_before, row.generation_after, row.source) == (
        10_000,
        13_500,
        4,
        5,
        "both",
    )


def test_the_tail_then_a_polled_rebalance_is_one_row_with_polling_s_start(sqlite_store):
    write_tail_update(sqlite_store, "c", TailUpdate(rebalances=[tailed(4, 5, 13_500, 13_500)]), NOW)
    sqlite_store.write_rebalances("c", [polled(10_000, None), polled(10_000, 20_000)])
    (row,) = [r.rebalance for r in read_rebalances(sqlite_store.engine, "c")]
    assert (row.started_at, row.ended_at, row.generation_after, row.source, row.partitions_moved) == (
        10_000,
        13_500,
        5,
        "both",
        2,
    )


def test_a_merged_row_takes_the_members_of_the_generation_that_ends_the_rebalance(sqlite_store):
    # cooperative, interrupted: m2 joins (generation 5 revokes), m3 leaves before generation 6 completes
    sqlite_store.write_rebalances("c", [polled(10_000, None)])
    write_tail_update(sqlite_store, "c", TailUpdate(rebalances=[tailed(4, 5, 10_500, None, "cooperative")]), NOW)
    ended = replace(tailed(4, 7, 10_500, 13_000, "cooperative"), left=(MemberRef("m3", "c3", "h"),))
    write_tail_update(sqlite_store, "c", TailUpdate(rebalances=[ended]), NOW)
    (row,) = [r.rebalance for r in read_rebalances(sqlite_store.engine, "c")]
    assert (row.generation_after, row.source, row.ended_at) == (7, "both", 13_000)
    assert ([m.member_id for m in row.joined], [m.member_id for m in row.left]) == (["m2"], ["m3"])


def test_rebalances_polling_merged_stay_apart_with_the_tail(sqlite_store):
    sqlite_store.write_rebalances("c", [polled(10_000, 30_000)])  # polling saw one long rebalance
    write_tail_update(
        sqlite_store, "c", TailUpdate(rebalances=[tailed(4, 5, 12_000, 12_000), tailed(5, 6, 25_000, 25_000)]), NOW
    )
    rows = [(r.rebalance.generation_before, r.rebalance.source) for r in read_rebalances(sqlite_store.engine, "c")]
    assert rows == [(4, "both"), (5, "offsets_topic")]


class FakeReader:
    """Stands in for monitor.kafka.OffsetsTopicReader: one partition holding `records`, read in batches of 2."""

    def __init__(self, records, fail_after: int | None = None):
        self.records, self.pos, self.fail_after, self.partitions = records, 0, fail_after, [0]

    def open(self, start):
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

    def open(self, start):
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
