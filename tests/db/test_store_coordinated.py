"""Coordinated collectors share the shard "kafka" and take turns; a group moves from one to another.

Its chart must span its whole history at full resolution, as from one collector, and
the groups each collector could not get an answer for must all show.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pg_server
from factories import T0, make_group, make_snapshot

from monitor.collector import Collector
from monitor.models import EventKind, TopicPartition
from monitor.shard import KafkaShard, coordinator_partition
from monitor.store import Store, make_engine, read_events, upgrade
from monitor.store.groups import read_unanswered
from monitor.store.lag import read_lag_series
from monitor.store.samples import read_thinned_sample_times

PARTITIONS = 12
STEPS = 60  # cycles of each collector, 1 s apart, the two 0.5 s out of step


def holding(name: str, groups: list[str]) -> KafkaShard:
    """A coordinated collector holding the __consumer_offsets partitions of `groups`."""
    shard = KafkaShard(name)
    shard.hold({coordinator_partition(g, PARTITIONS) for g in groups}, PARTITIONS, now_ms=0)
    return shard


def test_a_moved_groups_chart_has_every_point_of_both_collectors(db_engine):
    names = [f"g{i}" for i in range(40)]
    mover = names[0]
    moving = coordinator_partition(mover, PARTITIONS)
    others = [g for g in names if coordinator_partition(g, PARTITIONS) != moving]
    a_groups, b_groups = [mover, others[0]], [others[1]]
    a, b = Store(db_engine, holding("a", a_groups)), Store(db_engine, holding("b", b_groups))
    tp = TopicPartition("t", 0)
    for step in range(STEPS):
        at = T0 + step * 1000
        if step == STEPS // 2:  # halfway, the mover's partition goes from a to b
            a.shard.release({moving}, wait_s=0)
            b.shard.hold({moving}, PARTITIONS, now_ms=at)
        for store, offset_ms in ((a, 0), (b, 500)):
            groups = [make_group(g, committed={tp: step}) for g in names if store.shard.owns(g)]
            store.write_snapshot(make_snapshot(at + offset_ms, groups=groups))

    series = read_lag_series(db_engine, "c1", mover, T0, T0 + STEPS * 1000, points=STEPS)
    assert [p.committed for p in series] == list(range(STEPS))  # every cycle, before and after the move
    thinned = read_lag_series(db_engine, "c1", mover, T0, T0 + STEPS * 1000, points=20)
    assert len(thinned) >= 20 and thinned[-1].committed == STEPS - 1  # at least `points`, "lag now" last
    # the cluster-wide thinning keeps `points` of each collector
    assert len(read_thinned_sample_times(db_engine, "c1", T0, points=10)) == 20


def test_each_collectors_unanswered_groups_show(db_engine):
    a, b = Store(db_engine, holding("a", ["ga"])), Store(db_engine, holding("b", ["gb"]))
    for store, gid, at in ((a, "ga", T0), (b, "gb", T0 + 500)):
        stale = replace(make_group(gid), stale_since=at - 5000)
        store.write_snapshot(make_snapshot(at, groups=[stale]))
    assert read_unanswered(db_engine, "c1") == {"ga": T0 - 5000, "gb": T0 + 500 - 5000}


class OwnedGroups:
    """A Sampler of the groups its shard owns; it keeps when each call happened and what it returned."""

    def __init__(self, shard: KafkaShard, names: list[str]):
        self.shard, self.names, self.calls = shard, names, []

    def fetch_snapshot(self, now_ms):
        groups = [make_group(g) for g in self.names if self.shard.owns(g)]
        self.calls.append((time.monotonic(), {g.group_id for g in groups}))
        return make_snapshot(now_ms(), groups=groups)


def test_a_collector_taking_groups_over_cycles_at_once_not_at_its_next_interval(db_engine):
    names = [f"g{i}" for i in range(40)]
    shard = holding("a", names[:1])
    taken = next(g for g in names if not shard.owns(g))
    sampler = OwnedGroups(shard, names)
    collector, stop = Collector(sampler, Store(db_engine, shard), "c1"), threading.Event()
    thread = threading.Thread(target=collector.run, args=(60.0, stop))
    thread.start()
    try:
        assert collector.cycled.wait(30)
        held_at = time.monotonic()
        shard.hold({coordinator_partition(taken, PARTITIONS)}, PARTITIONS, now_ms=T0)
        deadline = held_at + 10
        while not any(taken in groups for _, groups in sampler.calls) and time.monotonic() < deadline:
            time.sleep(0.05)
        watched = [at - held_at for at, groups in sampler.calls if taken in groups]
        assert watched and watched[0] < 1.0  # the interval is a minute
    finally:
        stop.set()
        thread.join(30)


def test_a_group_taken_over_while_postgresql_is_down_is_not_reported_new(postgres):
    """The new owner cannot read the group's last answer: it goes on from its own first answer, which it
    stores once PostgreSQL is back, and the history says the group appeared once (not again at the handover)."""
    engine = make_engine(postgres.new_database())
    upgrade(engine)
    group = "moving-group"
    moving = coordinator_partition(group, PARTITIONS)
    a, b = KafkaShard("a"), KafkaShard("b")
    a.hold({moving}, PARTITIONS, now_ms=T0)
    b.hold({(moving + 1) % PARTITIONS}, PARTITIONS, now_ms=T0)
    now = [T0]
    on_a, on_b = (Collector(OwnedGroups(s, [group]), Store(engine, s), "c1", now_ms=lambda: now[0]) for s in (a, b))
    try:
        for step in range(2):
            now[0] = T0 + step * 1000
            on_a.poll_once(), on_b.poll_once()
        pg_server.pause(postgres)
        try:
            a.release({moving}, wait_s=0)
            b.hold({moving}, PARTITIONS, now_ms=now[0])
            now[0] += 1000
            assert on_b.poll_once().store_error  # kept, to be written when the store is back
        finally:
            pg_server.resume(postgres)
        now[0] += 1000
        assert on_b.poll_once().unstored_cycles == 0
        assert [(e.kind, e.group_id) for e in read_events(engine, "c1")] == [(EventKind.GROUP_APPEARED, group)]
        assert read_lag_series(engine, "c1", group, T0, now[0] + 1, points=10)[-1].at == now[0]
    finally:
        engine.dispose()
