"""monitor.store.rebalances against real databases: a rebalance in progress is completed in place."""

from __future__ import annotations

from factories import T0
from store_rows import count

from monitor.models import MemberRef, Rebalance, Trigger
from monitor.store import RebalanceRow, read_rebalances


def test_rebalance_in_progress_is_completed_in_place(db_store, db_engine):
    joined = (MemberRef("m-2", "client-b", "/10.0.0.2"),)
    started = Rebalance(
        "g1", T0, None, "eager", Trigger.MEMBER_JOINED, members_before=1, joined=joined, generation_before=4
    )
    db_store.write_rebalances("c1", [started])
    assert [r.rebalance for r in read_rebalances(db_engine, "c1", "g1")] == [started]

    done = Rebalance(
        "g1",
        T0,
        T0 + 3_000,
        "eager",
        Trigger.MEMBER_JOINED,
        members_before=1,
        members_after=2,
        joined=joined,
        left=(MemberRef("m-0", "client-z", "/10.0.0.9", "static-0"),),
        partitions_moved=3,
        generation_before=4,
        generation_after=5,
        source="both",
    )
    other = Rebalance("g1", T0 + 60_000, T0 + 61_000, "cooperative")
    assert db_store.write_rebalances("c1", [done, other]) == 2

    assert read_rebalances(db_engine) == [RebalanceRow("c1", done), RebalanceRow("c1", other)]
    assert read_rebalances(db_engine, since=T0 + 1, until=T0 + 60_001) == [RebalanceRow("c1", other)]
    assert read_rebalances(db_engine, group="g2") == []
    assert done.duration_ms == 3_000
    assert count(db_engine, "rebalances") == 2
