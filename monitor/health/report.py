"""What the health engine says each cycle: the one view of health that every consumer reads.

The alert rules, the exporter, the status-history writer, `monitor status` (through
the store) and the dashboard read these plain values; none of them judges again.
An unchanged group keeps the very same GroupHealth object from cycle to cycle, and
`changed` names the groups whose entry is new, so a consumer's work can follow
what changed rather than the size of the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from monitor.lag import LagClock, TimeLag
from monitor.models import GroupState, Status, TopicPartition


class PartitionHealth(NamedTuple):  # a tuple: 20,000 of them are made in a busy cycle
    tp: TopicPartition
    committed: int | None
    log_end: int | None
    lag: int | None  # offsets (monitor.lag.compute_lag)
    clock: LagClock | None  # lag in seconds at any time: clock.at(now)
    status: Status
    reason: str
    complete: float  # fraction of the commit window filled


class ShareHealth(NamedTuple):
    """One share-partition's in-flight records, and what the engine remembers of its archived count.

    The archived count is of records after the start offset: it drops when the start offset
    passes them, so only a rise between two samples says records were newly given up on.
    """

    tp: TopicPartition
    start_offset: int
    acknowledged: int
    archived: int
    redelivering: int
    max_delivery_count: int  # the most deliveries a record in flight has had (Kafka archives it at the limit)
    archived_rose_at: int | None = None  # when the archived count last rose between two samples (epoch ms)
    archived_rise: int = 0  # by how much it rose then
    archived_total: int = 0  # every rise since the engine's state began: records seen given up on (a lower bound)


@dataclass(frozen=True, slots=True)
class GroupHealth:
    group_id: str
    state: GroupState
    members: int
    status: Status  # OK, WARN or ERR (STOP/STALL/REWIND partitions count as ERR)
    worst: Status  # the worst partition status, kept apart
    total_lag: int
    max_lag: int
    max_lag_tp: TopicPartition | None
    complete: float  # fraction of partitions with a full window
    partitions: tuple[PartitionHealth, ...] = ()
    share: tuple[ShareHealth, ...] = ()  # share groups: each share-partition's in-flight records

    def lag_seconds(self, now: int) -> dict[TopicPartition, TimeLag]:
        """Lag in seconds of each partition that has one, at `now`."""
        out = {}
        for p in self.partitions:
            if p.clock is not None:
                lag = p.clock.at(now)
                if lag is not None:
                    out[p.tp] = lag
        return out


@dataclass(frozen=True)
class HealthReport:
    cluster: str
    at: int  # the snapshot's time (epoch ms): lag seconds are read at this instant
    groups: dict[str, GroupHealth] = field(default_factory=dict)
    changed: frozenset[str] = frozenset()  # groups whose entry differs from the previous report
    removed: frozenset[str] = frozenset()  # groups gone since the previous report
