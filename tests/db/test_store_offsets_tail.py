"""monitor.store.offsets_tail against real SQLite: positions with the data, rollups, one row per rebalance."""

from __future__ import annotations

from dataclasses import replace

from monitor.models import MemberRef, Rebalance, Trigger
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


def test_records_the_tail_cannot_read_are_counted_once_with_the_newest_reason(db_store):
    """Two undecodable records on partition 3, stored with the position; read again after a restart
    (below the stored position) they are not counted again (on SQLite and PostgreSQL: one upsert does it)."""
    garbage = [TailRecord(3, offset, NOW, b"\x00\x01\x00\x05ab", b"\xff") for offset in (7, 9)]
    update = TailState({3: 5}).apply(garbage)
    assert (update.failed, update.positions) == (2, {3: 10})
    write_tail_update(db_store, "c", update, NOW)
    [position] = read_tail_status(db_store.engine, "c")
    assert position.skipped == 2 and position.last_skipped.startswith("__consumer_offsets-3 offset 9: ")
    again = TailState({3: 10}).apply(garbage)
    assert again.failed == 2 and again.failures == {}
    write_tail_update(db_store, "c", TailUpdate(positions={3: 12}, failures={3: (1, "offset 11: x")}), NOW)
    assert [(p.skipped, p.last_skipped) for p in read_tail_status(db_store.engine, "c")] == [(3, "offset 11: x")]


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
