"""Share and streams groups in the store (SQLite and PostgreSQL): what only they have, read back as written."""

from __future__ import annotations

import sqlalchemy as sa
from factories import SHARE_ON_T, make_share_group, make_streams_group

from monitor.models import ClusterSnapshot, Member, PartitionOffsets, TopicPartition
from monitor.store import Store, read_share_partitions
from monitor.store.groups import read_group_header, read_members
from monitor.store.schema import assignments, group_members, group_states

T0 = 1_700_000_000_000


def cycle(k: int, *groups) -> ClusterSnapshot:
    parts = {tp: PartitionOffsets(0, 100) for g in groups for tp in g.committed}
    return ClusterSnapshot("c1", T0 + k * 1000, {g.group_id: g for g in groups}, parts)


def test_a_share_partition_held_by_two_members_is_stored_with_both(db_store):
    both = tuple(SHARE_ON_T)
    share = make_share_group(
        share=SHARE_ON_T, members=[Member(f"s-{i}", f"c-{i}", "/10.0.1.1", assignment=both) for i in (1, 2)]
    )
    db_store.write_snapshot(cycle(0, share))
    members = read_members(db_store.engine, "c1", share.group_id)
    assert [m.assignment for m in members] == [(("t", 0), ("t", 1))] * 2
    stored = read_share_partitions(db_store.engine, "c1", share.group_id)
    assert stored[TopicPartition("t", 0)].start_offset == 80 and stored[TopicPartition("t", 0)].redelivering == 3


def test_streams_facts_read_back_and_an_unchanged_group_writes_no_new_interval_after_a_restart(db_store):
    share, streams = make_share_group(), make_streams_group()
    db_store.write_snapshot(cycle(0, share, streams))
    header = read_group_header(db_store.engine, "c1", streams.group_id)
    assert (header.epoch, header.assignment_epoch, header.topology) == (7, 7, streams.topology)
    by_member = {m.member_id: m for m in read_members(db_store.engine, "c1", streams.group_id)}
    assert {mid: m.streams for mid, m in by_member.items()} == {m.member_id: m.streams for m in streams.members}
    restarted = Store(db_store.engine)  # a new collector process: the open intervals come from the database
    restarted.write_snapshot(cycle(1, share, streams))
    with db_store.engine.connect() as conn:
        for table in (group_states, group_members, assignments):
            opened_later = conn.execute(sa.select(sa.func.count()).where(table.c.valid_from > T0)).scalar()
            assert opened_later == 0, table.name
