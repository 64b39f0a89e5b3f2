"""monitor.offsets_topic.history: records built byte by byte, folded into commits, generations and rebalances."""

from __future__ import annotations

from kafka_wire import arr, b32, carr, cints, cs, i8, i16, i32, i64, s16, tags

from monitor.models import TopicPartition as TP
from monitor.models import Trigger
from monitor.offsets_topic.history import DELETED, CommitRow, TailRecord, TailState, TailUpdate, compute_commit_counts

T1_RAW = bytes(range(16))
T1 = "AAECAwQFBgcICQoLDA0ODw"


class Log:
    """One __consumer_offsets partition: append records, timestamps 1000, 2000, ..."""

    def __init__(self):
        self.records: list[TailRecord] = []

    def add(self, key: bytes, value: bytes | None) -> TailRecord:
        rec = TailRecord(0, len(self.records), 1000 * (len(self.records) + 1), key, value)
        self.records.append(rec)
        return rec


def commit(group, topic, partition, offset=None, ts=5):
    key = i16(1) + s16(group) + s16(topic) + i32(partition)
    return key, None if offset is None else i16(3) + i64(offset) + i32(-1) + s16("") + i64(ts)


def classic(group, generation, members, protocol="range"):
    """GroupMetadata v3: members = [(member_id, {topic: [partitions]})]."""

    def member(mid, owned):
        sub = i16(0) + arr([s16(t) for t in owned or {"t": []}]) + b32(None)
        asg = i16(0) + arr([s16(t) + arr([i32(p) for p in ps]) for t, ps in owned.items()]) + b32(None)
        return (
            s16(mid)
            + s16(None)
            + s16(f"client-{mid}")
            + s16("/10.0.0.9")
            + i32(300_000)
            + i32(10_000)
            + b32(sub)
            + b32(asg)
        )

    value = (
        i16(3)
        + s16("consumer")
        + i32(generation)
        + s16(protocol)
        + s16(members[0][0] if members else None)
        + i64(-1)
        + arr([member(m, owned) for m, owned in members])
    )
    return i16(2) + s16(group), value


def cg_key(rtype, group, member=None):
    return i16(rtype) + s16(group) + (s16(member) if member else b"")


def cg_member(group, member):
    return cg_key(5, group, member), (
        i16(0)
        + cs(None)
        + cs(None)
        + cs(f"client-{member}")
        + cs("/h")
        + carr([cs("t")])
        + cs(None)
        + i32(1000)
        + cs(None)
        + tags()
    )


def cg_epoch(rtype, group, epoch):  # 3 = group epoch, 6 = target assignment epoch
    return cg_key(rtype, group), i16(0) + i32(epoch) + tags()


def cg_target(group, member, parts):
    return cg_key(7, group, member), i16(0) + carr([T1_RAW + cints(parts) + tags()]) + tags()


def cg_current(group, member, epoch, parts, state=0):
    return cg_key(8, group, member), (
        i16(0) + i32(epoch) + i32(epoch - 1) + i8(state) + carr([T1_RAW + cints(parts) + tags()]) + carr([]) + tags()
    )


def test_commits_and_deletions_keep_the_committed_offsets_and_one_row_each():
    log = Log()
    for key, value in [commit("g", "t", 0, 5), commit("g", "t", 1, 7), commit("g", "t", 0, 9), commit("g", "t", 1)]:
        log.add(key, value)
    state = TailState()
    update = state.apply(log.records)
    assert update.commits == [
        CommitRow("g", "t", 0, 5, 5),
        CommitRow("g", "t", 1, 7, 5),
        CommitRow("g", "t", 0, 9, 5),
        CommitRow("g", "t", 1, DELETED, 4000),
    ]
    assert state.committed_for(["g", "other"]) == {"g": {TP("t", 0): 9}, "other": {}}
    assert update.positions == {0: 4} and state.read == {0: 4}


def test_commits_are_counted_per_group_and_topic_one_per_partition_offset():
    update = TailUpdate(
        commits=[
            CommitRow("g", "t", 0, 5, 100),
            CommitRow("g", "t", 1, 7, 100),  # the same commit request, another partition: counts too
            CommitRow("g", "t", 0, 9, 200),
            CommitRow("g", "u", 0, 1, 200),
            CommitRow("g", "t", 1, DELETED, 300),  # expired or deleted: no commit
            CommitRow("h", "t", 0, 3, 50),  # before the counting started
            CommitRow("x", "t", 0, 3, 300),
        ]
    )
    assert compute_commit_counts(update, since_ms=100) == {("g", "t"): 3, ("g", "u"): 1, ("x", "t"): 1}
    wanted = compute_commit_counts(update, since_ms=0, wants=lambda group, topic: group != "x" and topic != "u")
    assert wanted == {("g", "t"): 3, ("h", "t"): 1}
    assert compute_commit_counts(TailUpdate(), since_ms=0) == {}


def test_a_replayed_commit_is_not_counted_again():
    log = Log()
    for offset in range(1, 6):
        log.add(*commit("g", "t", 0, offset, ts=1000 * offset))
    first = TailState().apply(log.records[:3])
    again = TailState(stored=first.positions).apply(log.records)  # a new session replays from the beginning
    assert compute_commit_counts(first, 0) + compute_commit_counts(again, 0) == {("g", "t"): 5}


def test_a_restart_replays_for_the_state_but_stores_only_what_is_new():
    log = Log()
    for offset in range(1, 6):
        log.add(*commit("g", "t", 0, offset))
    first = TailState().apply(log.records[:3])
    restarted = TailState(stored=first.positions)
    update = restarted.apply(log.records)  # a restart reads from the beginning again
    assert [c.offset for c in update.commits] == [4, 5]
    assert restarted.committed_for(["g"]) == {"g": {TP("t", 0): 5}}
    assert update.positions == {0: 5}


def test_the_first_start_stores_only_the_span():
    log = Log()
    for offset in range(1, 5):
        log.add(*commit("g", "t", 0, offset))  # record timestamps 1000 .. 4000
    update = TailState(since_ms=3000).apply(log.records)
    assert [c.offset for c in update.commits] == [3, 4]


def test_eager_generations_are_one_rebalance_each_with_who_joined_and_left():
    log = Log()
    log.add(*classic("g", 1, [("a", {"t": [0, 1]})]))
    log.add(*classic("g", 2, [("a", {"t": [0]}), ("b", {"t": [1]})]))
    log.add(*classic("g", 3, [("b", {"t": [0, 1]})]))
    update = TailState().apply(log.records)
    assert [(g.kind, g.epoch, [m.member_id for m in g.members]) for g in update.generations] == [
        ("generation", 1, ["a"]),
        ("generation", 2, ["a", "b"]),
        ("generation", 3, ["b"]),
    ]
    assert update.generations[1].members[1].assignment == (TP("t", 1),)
    assert update.generations[1].members[1].host == "10.0.0.9"
    got = [
        (
            r.generation_before,
            r.generation_after,
            r.trigger,
            [m.member_id for m in r.joined],
            [m.member_id for m in r.left],
            r.partitions_moved,
            r.protocol,
            r.source,
        )
        for r in update.rebalances
    ]
    assert got == [
        (1, 2, Trigger.MEMBER_JOINED, ["b"], [], 1, "eager", "offsets_topic"),
        (2, 3, Trigger.MEMBER_LEFT, [], ["a"], 1, "eager", "offsets_topic"),
    ]


def test_a_cooperative_revoke_round_and_assign_round_are_one_rebalance():
    log = Log()
    log.add(*classic("g", 1, [("a", {"t": [0, 1]})], "cooperative-sticky"))
    log.add(*classic("g", 2, [("a", {"t": [0]}), ("b", {})], "cooperative-sticky"))  # t-1 revoked, unowned
    log.add(*classic("g", 3, [("a", {"t": [0]}), ("b", {"t": [1]})], "cooperative-sticky"))
    update = TailState().apply(log.records)
    assert [(r.generation_before, r.generation_after, r.started_at, r.ended_at) for r in update.rebalances] == [
        (1, 2, 2000, None),
        (1, 3, 2000, 3000),
    ]  # in progress after the first round, done after the second
    assert update.rebalances[-1].partitions_moved == 1


def test_a_kip848_join_completes_when_every_member_holds_the_new_target():
    log = Log()
    for key, value in [
        cg_member("g", "a"),
        cg_epoch(3, "g", 1),
        cg_target("g", "a", [0, 1]),
        cg_epoch(6, "g", 1),
        cg_current("g", "a", 1, [0, 1]),
        cg_member("g", "b"),
        cg_epoch(3, "g", 2),
        cg_target("g", "a", [0]),
        cg_target("g", "b", [1]),
        cg_epoch(6, "g", 2),
        cg_current("g", "a", 2, [0]),
        cg_current("g", "b", 1, [], state=1),
        cg_current("g", "b", 2, [1]),
    ]:
        log.add(key, value)
    state = TailState()
    state.topic_names[T1] = "t"
    update = state.apply(log.records)
    rebalances = [
        (
            r.generation_before,
            r.generation_after,
            r.started_at,
            r.ended_at,
            r.members_before,
            r.members_after,
            r.trigger,
        )
        for r in update.rebalances
    ]
    assert rebalances == [
        (1, 2, 7000, None, 1, 2, Trigger.MEMBER_JOINED),  # opened by the group epoch
        (1, 2, 7000, 13000, 1, 2, Trigger.MEMBER_JOINED),
    ]  # done when b holds t-1 at epoch 2
    targets = [g for g in update.generations if g.kind == "assignment_epoch"]
    assert [(g.epoch, [(m.member_id, m.assignment) for m in g.members]) for g in targets] == [
        (1, [("a", (TP("t", 0), TP("t", 1)))]),
        (2, [("a", (TP("t", 0),)), ("b", (TP("t", 1),))]),
    ]


def test_an_undecodable_record_is_counted_and_the_others_still_count():
    log = Log()
    log.add(*commit("g", "t", 0, 1))
    log.add(i16(1) + b"\x00", b"junk")
    log.add(*commit("g", "t", 0, 2))
    update = TailState().apply(log.records)
    assert (update.failed, [c.offset for c in update.commits], update.positions) == (1, [1, 2], {0: 3})
    assert "offset 1" in update.errors[0]


def test_a_shards_state_keeps_only_its_own_groups_but_reads_every_record():
    """--shard i/n: the tail stores and answers for its groups only; its positions still cover every record."""
    from monitor.shard import Shard

    shard = Shard(1, 2)
    mine, theirs = (
        next(g for g in ("a", "b", "c", "d") if shard.owns(g)),
        next(g for g in ("a", "b", "c", "d") if not shard.owns(g)),
    )
    log = Log()
    for group in (mine, theirs):
        log.add(*commit(group, "t", 0, 7))
        log.add(*classic(group, 1, [("m1", {"t": [0]})]))
        log.add(*classic(group, 2, [("m1", {"t": [0]}), ("m2", {"t": []})]))
    state = TailState(owns=shard.owns)
    update = state.apply(log.records)
    assert {c.group_id for c in update.commits} == {mine}
    assert {g.group_id for g in update.generations} == {mine}
    assert {r.group_id for r in update.rebalances} == {mine}
    assert state.committed_for([mine, theirs]) == {mine: {TP("t", 0): 7}, theirs: {}}
    assert update.positions == {0: len(log.records)} and state.read == {0: len(log.records)}
    everything = TailState().apply(log.records)
    assert {c.group_id for c in everything.commits} == {mine, theirs}
