"""monitor.store.groups against real databases: a snapshot written by the Store reads back as groups."""

from __future__ import annotations

from factories import T0, make_group, make_snapshot

from monitor.models import GroupState, GroupType, Member, PartitionOffsets, TopicPartition
from monitor.store import GroupRow, read_groups

TP = TopicPartition


def test_snapshot_round_trips_into_read_groups(db_store, db_engine):
    g2 = make_group(
        "g2",
        state=GroupState.PREPARING_REBALANCE,
        type=GroupType.CONSUMER,
        assignor="uniform",
        coordinator=2,
        state_inferred=True,
        note="reconciling",
        committed={TP("u", 0): 7, TP("u", 1): None},
        members=[Member("m-a", "c-a", "/h1", assignment=(TP("u", 0),)), Member("m-b", "c-b", "/h2")],
    )
    snap = make_snapshot(
        groups=[make_group(), g2],
        partitions={
            TP("t", 0): PartitionOffsets(0, 100),
            TP("t", 1): PartitionOffsets(5, 100),
            TP("u", 0): PartitionOffsets(0, 7),
            TP("u", 1): PartitionOffsets(0, 3),
        },
    )
    sample_id = db_store.write_snapshot(snap)

    assert isinstance(sample_id, int)
    assert read_groups(db_engine) == [
        GroupRow(
            cluster="c1",
            group_id="g1",
            state=GroupState.STABLE,
            type=GroupType.CLASSIC,
            protocol_type="consumer",
            assignor="range",
            coordinator=1,
            state_inferred=False,
            note=None,
            since=T0,
            members=1,
            partitions=2,
            total_lag=70,
            max_lag=60,
            last_sample_at=T0,
        ),
        GroupRow(
            cluster="c1",
            group_id="g2",
            state=GroupState.PREPARING_REBALANCE,
            type=GroupType.CONSUMER,
            protocol_type="consumer",
            assignor="uniform",
            coordinator=2,
            state_inferred=True,
            note="reconciling",
            since=T0,
            members=2,
            partitions=2,
            total_lag=0,
            max_lag=0,
            last_sample_at=T0,
        ),
    ]
