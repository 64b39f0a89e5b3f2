"""Share and streams groups rebuilt from their coordinator's records (monitor.offsets_topic.log_groups)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from monitor.models import GroupState, GroupType, SharePartition, Task, TopicPartition
from monitor.offsets_topic.log_groups import LogGroups, compute_snapshot
from monitor.offsets_topic.records import (
    Endpoint,
    ShareGroupCurrentMemberAssignment,
    ShareGroupMemberMetadata,
    ShareGroupMetadata,
    ShareGroupStatePartitionMetadata,
    ShareGroupTargetAssignmentMetadata,
    ShareTopicPartitions,
    StreamsGroupCurrentMemberAssignment,
    StreamsGroupMemberMetadata,
    StreamsGroupMetadata,
    StreamsGroupTargetAssignmentMetadata,
    StreamsGroupTopology,
    Subtopology,
    TaskIds,
    TopicIdPartitions,
    TopicInfo,
)

ORDERS_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
NAMES = {ORDERS_ID: "orders"}


def share_records(members=("m1", "m2")):
    out = [
        ShareGroupMetadata("sg", epoch=3),
        ShareGroupTargetAssignmentMetadata("sg", assignment_epoch=3),
        ShareGroupStatePartitionMetadata("sg", initialized_topics=(ShareTopicPartitions(ORDERS_ID, "orders", (0, 1)),)),
    ]
    for i, m in enumerate(members):
        out += [
            ShareGroupMemberMetadata(
                "sg", m, client_id=f"c-{m}", client_host="/10.0.0.1", subscribed_topic_names=("orders",)
            ),
            ShareGroupCurrentMemberAssignment(
                "sg", m, member_epoch=3, state=0, assigned_partitions=(TopicIdPartitions(ORDERS_ID, (i,)),)
            ),
        ]
    return out


def fold(records) -> LogGroups:
    groups = LogGroups()
    for r in records:
        groups.apply(r)
    return groups


def test_a_share_group_with_members_is_stable_and_its_lag_follows_each_share_partition():
    groups = fold(share_records())
    share = {TopicPartition("orders", 0): SharePartition(start_offset=100, delivery_complete=5)}
    snap = compute_snapshot("sg", groups.groups["sg"], groups.topic_names, {}, share, coordinator=1)
    assert (snap.type, snap.state, snap.epoch, snap.assignment_epoch) == (GroupType.SHARE, GroupState.STABLE, 3, 3)
    assert [(m.member_id, m.client_id, m.host, m.assignment) for m in snap.members] == [
        ("m1", "c-m1", "10.0.0.1", (TopicPartition("orders", 0),)),
        ("m2", "c-m2", "10.0.0.1", (TopicPartition("orders", 1),)),
    ]
    # the position (start + done) stands for the committed offset; a partition without state is "not yet"
    assert snap.committed == {TopicPartition("orders", 0): 105, TopicPartition("orders", 1): None}
    assert snap.share == share and snap.members[0].subscribed == ("orders",)


def test_a_share_group_without_its_share_state_says_why_its_lag_is_unknown():
    groups = fold(share_records())
    snap = compute_snapshot("sg", groups.groups["sg"], groups.topic_names, {}, None, None)
    assert set(snap.committed.values()) == {None} and "__share_group_state" in snap.note
    assert compute_snapshot("sg", groups.groups["sg"], groups.topic_names, {}, {}, None).note is None


def test_members_leaving_empty_the_group_and_deleting_it_forgets_it():
    leave = [
        r.__class__(r.group, r.member_id, tombstone=True)
        for r in share_records()
        if isinstance(r, ShareGroupMemberMetadata | ShareGroupCurrentMemberAssignment)
    ]
    groups = fold(share_records() + leave)
    snap = compute_snapshot("sg", groups.groups["sg"], groups.topic_names, {}, {}, None)
    assert snap.state is GroupState.EMPTY and snap.members == ()
    groups.apply(ShareGroupMetadata("sg", tombstone=True))
    assert "sg" not in groups.groups


def tasks(*pairs):
    return tuple(TaskIds(s, ps) for s, ps in pairs)


TOPOLOGY = StreamsGroupTopology(
    "app",
    epoch=0,
    subtopologies=(
        Subtopology("0", ("words",), (), (), ("app-repartition",), (), ()),
        Subtopology(
            "1", (), (), (TopicInfo("app-store-changelog", 2, 1),), (), (TopicInfo("app-repartition", 2, 1),), ()
        ),
    ),
)


def streams_records(*, assignment_epoch=5, member_epoch=5, topology=True):
    out = [StreamsGroupMetadata("app", epoch=5, validated_topology_epoch=0)]
    out += [TOPOLOGY] if topology else []
    out += [
        StreamsGroupTargetAssignmentMetadata("app", assignment_epoch=assignment_epoch),
        StreamsGroupMemberMetadata(
            "app",
            "s1",
            client_id="app-1-StreamThread-1-consumer",
            client_host="/127.0.0.1",
            topology_epoch=0,
            process_id="p-1",
            user_endpoint=Endpoint("", 0),
        ),
        StreamsGroupCurrentMemberAssignment(
            "app",
            "s1",
            member_epoch=member_epoch,
            state=1,  # STABLE in a streams member's states (Kafka numbers them from 1 there)
            active_tasks=tasks(("0", (0, 1)), ("1", (1,))),
            standby_tasks=tasks(("1", (0,))),
        ),
    ]
    return out


@pytest.mark.parametrize(
    ("records", "state"),
    [
        (streams_records(), GroupState.STABLE),
        (streams_records(assignment_epoch=4), GroupState.ASSIGNING),
        (streams_records(member_epoch=4), GroupState.RECONCILING),
        (streams_records(topology=False), GroupState.NOT_READY),
        (streams_records()[:2], GroupState.EMPTY),
    ],
)
def test_a_streams_group_state_follows_its_coordinators_rules(records, state):
    groups = fold(records)
    assert compute_snapshot("app", groups.groups["app"], {}, {}, None, None).state is state


def test_a_streams_member_owns_the_input_partitions_of_its_active_tasks():
    groups = fold(streams_records())
    committed = {TopicPartition("words", 0): 42}
    snap = compute_snapshot("app", groups.groups["app"], {}, committed, None, None)
    (member,) = snap.members
    assert member.streams.process_id == "p-1" and member.streams.user_endpoint is None
    assert member.streams.tasks.active == (Task("0", 0), Task("0", 1), Task("1", 1))
    assert member.streams.tasks.standby == (Task("1", 0),)
    assert member.assignment == (
        TopicPartition("app-repartition", 1),
        TopicPartition("words", 0),
        TopicPartition("words", 1),
    )
    assert snap.committed == {
        TopicPartition("words", 0): 42,
        TopicPartition("words", 1): None,
        TopicPartition("app-repartition", 1): None,
    }
    assert [s.changelog_topics for s in snap.topology.subtopologies] == [(), ("app-store-changelog",)]


def test_the_tail_hands_back_an_unchanged_group_as_the_same_snapshot_and_rebuilds_a_changed_one():
    from monitor.offsets_topic.history import TailState
    from monitor.shard import UNSHARDED
    from monitor.tail import OffsetsTail

    tail = OffsetsTail(lambda: None, SimpleNamespace(shard=UNSHARDED), "c1", span_ms=0)
    state = TailState()
    for r in streams_records():
        state.log_groups.apply(r)
    tail._state, tail._session_version, tail.caught_up_at = state, UNSHARDED.version, 1.0  # a session read it all
    first = tail.log_group_snapshots(None, lambda g: 1)
    assert tail.log_group_snapshots(None, lambda g: 1)["app"] is first["app"]
    state.committed["app"] = {TopicPartition("words", 0): 50}  # a commit of the streams group
    second = tail.log_group_snapshots(None, lambda g: 1)
    assert second["app"] is not first["app"] and second["app"].committed[TopicPartition("words", 0)] == 50
    state.log_groups.apply(StreamsGroupMetadata("app", epoch=6, validated_topology_epoch=0))  # a new group epoch
    assert tail.log_group_snapshots(None, lambda g: 1)["app"].state is GroupState.ASSIGNING
    assert tail.log_group_snapshots(None, lambda g: 2)["app"].coordinator == 2  # the coordinator moved
