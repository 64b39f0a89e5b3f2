"""monitor.store.lag against real databases: a group's lag per partition now, and log offsets per sample."""

from __future__ import annotations

import pytest
from factories import T0, make_group, make_snapshot

from monitor.models import Member, PartitionOffsets, TopicPartition, UnknownGroup
from monitor.store import PartitionLag, PartitionPoint, read_group_lag, read_partition_history

TP = TopicPartition


def test_read_group_lag_gives_every_partition_with_its_owner(db_store, db_engine):
    group = make_group(
        committed={TP("t", 0): 90, TP("t", 1): None, TP("t", 2): 120, TP("v", 0): -1001},
        members=[
            Member("m-1", "client-a", "/10.0.0.1", assignment=(TP("t", 0), TP("t", 1))),
            Member("m-2", "client-b", "/10.0.0.2", instance_id="static-2", assignment=(TP("t", 2), TP("t", 3))),
        ],
    )
    partitions = {TP("t", p): PartitionOffsets(0, 100) for p in range(4)}  # v:0 log end unknown
    db_store.write_snapshot(make_snapshot(groups=[group], partitions=partitions))

    assert read_group_lag(db_engine, "c1", "g1") == [
        PartitionLag("t", 0, 90, 100, 10, "m-1", "client-a", "/10.0.0.1"),
        PartitionLag("t", 1, None, 100, None, "m-1", "client-a", "/10.0.0.1"),
        PartitionLag("t", 2, 120, 100, 0, "m-2", "client-b", "/10.0.0.2"),  # clamped at 0
        PartitionLag("t", 3, None, 100, None, "m-2", "client-b", "/10.0.0.2"),  # assigned, never committed
        PartitionLag("v", 0, None, None, None, None, None, None),  # -1001 means no commit
    ]


def test_read_group_lag_of_an_unknown_group_raises(db_store, db_engine):
    db_store.write_snapshot(make_snapshot())
    with pytest.raises(UnknownGroup):
        read_group_lag(db_engine, "c1", "nope")
    with pytest.raises(UnknownGroup):
        read_group_lag(db_engine, "other-cluster", "g1")


def test_partition_history_gives_log_offsets_per_sample_and_when_they_were_read(db_store, db_engine):
    parts = {TP("t", 0): PartitionOffsets(3, 100, 97), TP("t", 1): PartitionOffsets(0, 50)}
    db_store.write_snapshot(make_snapshot(partitions=parts, duration_ms=250))
    assert read_partition_history(db_engine, "c1", since=T0, topic="t") == [
        PartitionPoint(T0, "t", 0, 3, 100, 97, 0, T0 + 250),
        PartitionPoint(T0, "t", 1, 0, 50, None, 0, T0 + 250),
    ]
