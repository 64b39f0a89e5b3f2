"""Plain builders of test data shared by more than one test layer (tests/db, tests/ui).

Each returns new objects with defaults a test can override by keyword; none
touches a database or a broker. Layer-specific setup lives in that folder's
conftest.py; the dashboard's bigger seed is tests/dashboard_seed.py.
"""

from __future__ import annotations

from monitor.models import (
    ClusterSnapshot,
    GroupSnapshot,
    GroupState,
    GroupType,
    Member,
    PartitionOffsets,
    TopicPartition,
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

    offsets_from_tail = False

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
