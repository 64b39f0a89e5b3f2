"""Plain builders of test data shared by more than one test layer (tests/db, tests/ui).

Each returns new objects with defaults a test can override by keyword; none
touches a database or a broker. Layer-specific setup lives in that folder's
conftest.py; the dashboard's bigger seed is tests/support/dashboard_seed.py.
"""

from __future__ import annotations

from monitor.models import (
    ClusterSnapshot,
    GroupSnapshot,
    GroupState,
    GroupType,
    Member,
    PartitionOffsets,
    SharePartition,
    StreamsMember,
    StreamsTasks,
    Subtopology,
    Task,
    TopicPartition,
    Topology,
)
from monitor.shard import Shard

T0 = 1_700_000_400_000  # a 10-minute boundary (epoch ms), so rollup buckets are predictable


def make_group(group_id="g1", *, state=GroupState.STABLE, committed=None, members=None, **kw) -> GroupSnapshot:
    """A classic group; by default one member owning t:0 and t:1, both committed."""
    if committed is None:
        committed = {TopicPartition("t", 0): 90, TopicPartition("t", 1): 40}
    if members is None:
        members = (Member("m-1", "client-a", "/10.0.0.1", assignment=tuple(committed)),)
    kw.setdefault("type", GroupType.CLASSIC)
    kw.setdefault("assignor", "range")
    kw.setdefault("coordinator", 1)
    return GroupSnapshot(group_id, state, members=tuple(members), committed=dict(committed), **kw)


SHARE_ON_T = {  # t:0 with records in flight, t:1 with none
    TopicPartition("t", 0): SharePartition(80, 5, acknowledged=5, redelivering=3, max_delivery_count=2),
    TopicPartition("t", 1): SharePartition(40, 0),
}


def make_share_group(
    group_id="jobs-share", *, state=GroupState.STABLE, share=None, members=None, **kw
) -> GroupSnapshot:
    """A share group (KIP-932) on `jobs`: committed is each share-partition's position, as the sampler stores it.

    By default jobs-0 starts at 40 with 25 records done since (20 acknowledged, 5 archived) and 6
    redelivering, and jobs-1 starts at 90 with nothing in flight; two members subscribed to `jobs`.
    """
    if share is None:
        share = {
            TopicPartition("jobs", 0): SharePartition(
                40, 25, acknowledged=20, archived=5, redelivering=6, max_delivery_count=3
            ),
            TopicPartition("jobs", 1): SharePartition(90, 0),
        }
    if members is None:
        topics = tuple(sorted({tp.topic for tp in share}))
        members = tuple(
            Member(f"sm-{i}", f"share-{i}", f"10.0.4.{i}", assignment=(tp,), subscribed=topics, rack=f"r{i}")
            for i, tp in enumerate(share)
        )
    kw.setdefault("type", GroupType.SHARE)
    kw.setdefault("protocol_type", "share")
    kw.setdefault("coordinator", 1)
    kw.setdefault("epoch", 4)
    kw.setdefault("assignment_epoch", 4)
    committed = {tp: sp.position for tp, sp in share.items()}
    return GroupSnapshot(group_id, state, members=tuple(members), committed=committed, share=dict(share), **kw)


WORDS = tuple(TopicPartition("words", p) for p in range(2))
COUNTS_REPARTITION = tuple(TopicPartition("wordcount-counts-repartition", p) for p in range(2))
WORDCOUNT = Topology(
    1,
    (
        Subtopology("0", ("words",), repartition_sink_topics=("wordcount-counts-repartition",)),
        Subtopology(
            "1",
            (),
            repartition_source_topics=("wordcount-counts-repartition",),
            changelog_topics=("wordcount-counts-changelog",),
        ),
    ),
)


def make_streams_group(group_id="wordcount", *, state=GroupState.STABLE, members=None, **kw) -> GroupSnapshot:
    """A streams group (KIP-1071) running WORDCOUNT: two instances, each active on one partition of both
    sub-topologies and standby for the other's state; committed 10 behind a log end of 100."""
    if members is None:
        members = tuple(
            Member(
                f"wm-{i}",
                f"wordcount-{i}",
                f"10.0.5.{i}",
                assignment=(WORDS[i], COUNTS_REPARTITION[i]),
                epoch=7,
                streams=StreamsMember(
                    f"process-{i}",
                    1,
                    StreamsTasks(active=(Task("0", i), Task("1", i)), standby=(Task("1", 1 - i),)),
                    user_endpoint=f"10.0.5.{i}:7070",
                ),
            )
            for i in range(2)
        )
    kw.setdefault("type", GroupType.STREAMS)
    kw.setdefault("protocol_type", "streams")
    kw.setdefault("coordinator", 1)
    kw.setdefault("epoch", 7)
    kw.setdefault("assignment_epoch", 7)
    kw.setdefault("topology", WORDCOUNT)
    kw.setdefault("committed", dict.fromkeys((*WORDS, *COUNTS_REPARTITION), 90))
    return GroupSnapshot(group_id, state, members=tuple(members), **kw)


def make_snapshot(taken_at=T0, *, cluster="c1", groups=None, partitions=None, errors=(), duration_ms=120):
    """A cluster snapshot; partitions default to every committed partition with log end 100."""
    groups = [make_group()] if groups is None else groups
    if partitions is None:
        partitions = {tp: PartitionOffsets(0, 100) for g in groups for tp in g.committed}
    return ClusterSnapshot(
        cluster,
        taken_at,
        {g.group_id: g for g in groups},
        dict(partitions),
        duration_ms=duration_ms,
        errors=tuple(errors),
    )


def owned_groups(shard: Shard, n: int, prefix: str) -> list[str]:
    """The first n names `{prefix}-0`, `{prefix}-1`, ... that `shard` owns."""
    return [g for g in (f"{prefix}-{i}" for i in range(100)) if shard.owns(g)][:n]


class LagSwitch:
    """A Sampler (monitor.ports) of groups that lag by `lag` offsets while the test names them in `lagging`.

    Each group reads its own topic `{group}-t` (one partition, log end 1000). Its clock is `now()`:
    real time unless the test gives one, so an outside system (Alertmanager) agrees on when things happen.
    """

    def __init__(self, cluster: str, groups, lag: int = 500, now=None):
        import time

        self.cluster, self.groups, self.lag = cluster, list(groups), lag
        self.lagging: set[str] = set()
        self.now = now or (lambda: int(time.time() * 1000))

    def fetch_snapshot(self, now_ms):
        tps = {g: TopicPartition(f"{g}-t", 0) for g in self.groups}
        groups = [make_group(g, committed={tps[g]: 1000 - (self.lag if g in self.lagging else 0)}) for g in self.groups]
        return make_snapshot(
            self.now(),
            cluster=self.cluster,
            groups=groups,
            partitions={tp: PartitionOffsets(0, 1000) for tp in tps.values()},
        )


class Clocks:
    """A wall clock that can jump and a monotonic one that cannot, both in ms."""

    def __init__(self):
        self.wall_at, self.mono_at = 1_700_000_000_000, 5_000

    def wall(self) -> int:
        return self.wall_at

    def monotonic(self) -> int:
        return self.mono_at

    def tick(self, ms: int = 1000) -> None:
        self.wall_at += ms
        self.mono_at += ms
