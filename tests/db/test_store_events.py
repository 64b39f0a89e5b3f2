"""monitor.store.events against real databases: events written per cluster read back, filtered."""

from __future__ import annotations

from factories import T0

from monitor.models import Event, EventKind, GroupState, TopicPartition
from monitor.store import EventRow, read_events

TP = TopicPartition


def test_events_round_trip(db_store, db_engine):
    db_store.write_events(
        "c1",
        [
            Event(T0, "g1", EventKind.MEMBER_JOINED, {"member_id": "m-2", "partitions": [TP("t", 0)]}),
            Event(T0 + 5, "g2", EventKind.STATE_CHANGED, {"from": GroupState.STABLE, "to": GroupState.EMPTY}),
        ],
    )
    db_store.write_events("c2", [Event(T0 + 9, "g1", EventKind.GROUP_APPEARED)])

    assert read_events(db_engine, "c1") == [
        EventRow("c1", T0, "g1", EventKind.MEMBER_JOINED, {"member_id": "m-2", "partitions": [["t", 0]]}),
        EventRow("c1", T0 + 5, "g2", EventKind.STATE_CHANGED, {"from": "Stable", "to": "Empty"}),
    ]
    assert [(e.cluster, e.group_id) for e in read_events(db_engine, group="g1")] == [("c1", "g1"), ("c2", "g1")]
    assert [e.at for e in read_events(db_engine, since=T0 + 5)] == [T0 + 5, T0 + 9]
    assert [e.at for e in read_events(db_engine, limit=2)] == [T0 + 5, T0 + 9]
