"""The shared contract: domain dataclasses, enums and named errors.

Every part of lagmon imports this module and it imports none of them, so the
collector, the pure cores, the store, Spark and the dashboard agree on one
vocabulary. Timestamps are integer epoch milliseconds UTC; offsets are ints.
"""

from __future__ import annotations

import enum
import functools
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple


class LagmonError(Exception):
    """Base of every error lagmon raises on purpose; its message is for people."""


class ConfigError(LagmonError):
    """A setting is missing or malformed."""


class KafkaUnavailable(LagmonError):
    """The cluster could not be reached or refused us (network, auth, ACLs)."""


class NotAuthorized(KafkaUnavailable):
    """The cluster refused for want of an ACL (librdkafka's *_AUTHORIZATION_FAILED): retrying will not help."""


class TopicNotCreated(KafkaUnavailable):
    """An internal topic Kafka creates on first use (e.g. __share_group_state before any share group)."""


class StoreUnavailable(LagmonError):
    """The database could not take a write for now (down, restarting, locked, full, read-only): retry later."""


class StoreRefused(LagmonError):
    """The database refused for good (permissions, a schema it does not have): retrying will not help."""


class UnknownGroup(LagmonError):
    """A consumer group that the cluster or the store does not know."""


class DecodeError(LagmonError):
    """A __consumer_offsets record that cannot be decoded (the reason says why)."""


class DevClusterError(LagmonError):
    """The local development cluster could not be set up, started or reached."""


class GroupState(enum.StrEnum):
    """Group states as Kafka names them, including the KIP-848 ones."""

    STABLE = "Stable"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    ASSIGNING = "Assigning"  # KIP-848: librdkafka reports it as UNKNOWN
    RECONCILING = "Reconciling"  # KIP-848: librdkafka reports it as UNKNOWN
    NOT_READY = "NotReady"  # streams groups: the topology's internal topics are missing
    EMPTY = "Empty"
    DEAD = "Dead"
    UNKNOWN = "Unknown"

    @property
    def rebalancing(self) -> bool:
        return self in _REBALANCING


_REBALANCING = {
    GroupState.PREPARING_REBALANCE,
    GroupState.COMPLETING_REBALANCE,
    GroupState.ASSIGNING,
    GroupState.RECONCILING,
}


class GroupType(enum.StrEnum):
    """Which group protocol the group speaks."""

    CLASSIC = "classic"
    CONSUMER = "consumer"  # KIP-848
    SHARE = "share"  # KIP-932: members share partitions; records are acquired and acknowledged one by one
    STREAMS = "streams"  # KIP-1071: the coordinator assigns a Kafka Streams topology's tasks
    UNKNOWN = "unknown"


class Status(enum.IntEnum):
    """Burrow-style health, ordered from best to worst so max() is the roll-up."""

    OK = 0
    WARN = 1
    ERR = 2
    STOP = 3
    STALL = 4
    REWIND = 5


class TopicPartition(NamedTuple):
    topic: str
    partition: int


# The one TopicPartition for (topic, partition): a partition is held by every group that reads it and by
# every state (snapshots, tail, health, store caches); 20,000 group-partitions made 100,000 copies.
# A cache hit also costs less than building a new one.
intern_tp: Callable[[str, int], TopicPartition] = functools.cache(TopicPartition)


class RecordTime(NamedTuple):
    """A record's own timestamp: the broker's append time on a LogAppendTime topic, else the producer's CreateTime."""

    timestamp: int  # epoch ms
    log_append: bool


class Task(NamedTuple):
    """A Kafka Streams task: one partition of one sub-topology (printed as "0_1")."""

    subtopology: str
    partition: int

    def __str__(self) -> str:
        return f"{self.subtopology}_{self.partition}"


class TailMode(enum.StrEnum):
    """LAGMON_OFFSETS_TOPIC: read __consumer_offsets when readable, always, or never."""

    AUTO = "auto"
    ON = "on"
    OFF = "off"


class Granularity(enum.StrEnum):
    """LAGMON_METRICS_GRANULARITY: every series, or none per partition and none with member labels."""

    PARTITION = "partition"
    TOPIC = "topic"


@dataclass(frozen=True)
class Filter:
    """Which names (groups, topics) to watch: the allow-list first, then the deny-list wins.

    The one rule behind LAGMON_GROUP_ALLOW/DENY, LAGMON_TOPIC_ALLOW/DENY and an alert rule's
    `groups:` / `topics:`; no pattern lets everything through.
    """

    allow: re.Pattern | None = None
    deny: re.Pattern | None = None

    @property
    def unfiltered(self) -> bool:
        return self.allow is None and self.deny is None

    def wants(self, name: str) -> bool:
        if self.allow and not self.allow.search(name):
            return False
        return not (self.deny and self.deny.search(name))


@dataclass(frozen=True)
class StreamsTasks:
    """What a streams-group member runs (or is to run): active, standby and warm-up tasks."""

    active: tuple[Task, ...] = ()
    standby: tuple[Task, ...] = ()
    warmup: tuple[Task, ...] = ()

    def of(self, kind: TaskKind) -> tuple[Task, ...]:
        return getattr(self, kind)


class TaskKind(enum.StrEnum):
    """The kinds of a streams task, as StreamsTasks names them (and the exporter's `kind` label)."""

    ACTIVE = "active"
    STANDBY = "standby"
    WARMUP = "warmup"


@dataclass(frozen=True)
class StreamsMember:
    """What only a streams-group member has: its Kafka Streams process and tasks."""

    process_id: str
    topology_epoch: int
    tasks: StreamsTasks = StreamsTasks()
    target_tasks: StreamsTasks | None = None
    user_endpoint: str | None = None  # host:port for interactive queries, when the app set one


@dataclass(frozen=True)
class Member:
    """One member of a group as the coordinator describes it."""

    member_id: str
    client_id: str
    host: str
    instance_id: str | None = None
    assignment: tuple[TopicPartition, ...] = ()
    target_assignment: tuple[TopicPartition, ...] | None = None  # KIP-848, share and streams groups
    rack: str | None = None
    subscribed: tuple[str, ...] = ()  # topics; KIP-848 and share groups (from the coordinator's log)
    epoch: int | None = None  # the member epoch, for the groups read from the coordinator's log
    streams: StreamsMember | None = None


@dataclass(frozen=True)
class Subtopology:
    """One sub-topology of a streams group: the topics it reads and the internal topics it owns."""

    subtopology_id: str
    source_topics: tuple[str, ...]
    repartition_source_topics: tuple[str, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    changelog_topics: tuple[str, ...] = ()


@dataclass(frozen=True)
class Topology:
    """A streams group's topology as its members declared it to the coordinator."""

    epoch: int
    subtopologies: tuple[Subtopology, ...]


class DeliveryState(enum.IntEnum):
    """A share-partition record's state as the share coordinator persists it (Acquired is never persisted)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


@dataclass(frozen=True)
class SharePartition:
    """One share-partition (a share group on one topic-partition): where it starts and what is in flight.

    `start_offset` is the share-partition start offset (SPSO): every record before it is
    delivery-complete. `delivery_complete` counts the records at or after it that are
    already done (acknowledged or archived): Kafka's lag is log_end - start_offset -
    delivery_complete (KIP-1226). None when the coordinator has not said (-1 in Kafka).
    The counts are over the persisted state batches: records Kafka delivered at least once
    and not yet settled (`redelivering`: available again after a release or a timed-out
    lock), acknowledged and archived ones.
    """

    start_offset: int
    delivery_complete: int | None
    state_epoch: int = 0
    leader_epoch: int = 0
    acknowledged: int = 0
    archived: int = 0
    redelivering: int = 0
    max_delivery_count: int = 0  # the most deliveries any record in flight has had
    written_at: int | None = None  # when the share coordinator last wrote this state (epoch ms)

    @property
    def position(self) -> int | None:
        """The offset that makes lag = log_end - position equal Kafka's share-partition lag."""
        if self.start_offset < 0 or self.delivery_complete is None:
            return None
        return self.start_offset + self.delivery_complete


@dataclass(frozen=True)
class PartitionOffsets:
    """Where one partition's log starts and ends at sampling time."""

    log_start: int
    log_end: int  # high watermark
    last_stable: int | None = None  # read_committed end; None when not fetched


@dataclass(frozen=True)
class GroupSnapshot:
    """One group at one sampling instant."""

    group_id: str
    state: GroupState
    type: GroupType = GroupType.UNKNOWN
    protocol_type: str = "consumer"
    assignor: str = ""
    coordinator: int | None = None
    members: tuple[Member, ...] = ()
    committed: dict[TopicPartition, int | None] = field(default_factory=dict)
    state_inferred: bool = False  # True when the state was derived, not reported
    note: str | None = None  # why something is missing (e.g. "not a consumer group"), for people
    # Share and streams groups (read from the coordinators' logs): epochs, and what only they have.
    epoch: int | None = None  # the group epoch
    assignment_epoch: int | None = None  # the epoch of the coordinator's target assignment
    share: dict[TopicPartition, SharePartition] | None = None  # share groups: committed holds `position`
    topology: Topology | None = None  # streams groups
    # Kafka did not answer for the group this cycle (a partial answer): these are its values as last
    # answered, at this time; shown as unknown, never stored or exported as new (collector.compute_carried)
    stale_since: int | None = None
    # the first answer without errors that left the group out (a coordinator still loading it, or gone)
    left_out_since: int | None = None

    @property
    def is_consumer_group(self) -> bool:
        """False for a group whose members and assignments lagmon cannot read (Connect, ...): nothing to compare.

        Share and streams groups count: their coordinator's records describe both.
        """
        return self.protocol_type in _MEMBER_PROTOCOLS


_MEMBER_PROTOCOLS = frozenset({"consumer", "share", "streams"})


@dataclass(frozen=True)
class ClusterSnapshot:
    """Everything one collector cycle saw."""

    cluster: str
    taken_at: int
    groups: dict[str, GroupSnapshot]
    partitions: dict[TopicPartition, PartitionOffsets]
    duration_ms: int = 0
    errors: tuple[str, ...] = ()
    # Group types this cycle could not see because their source was not ready (share and streams
    # groups before the offsets-topic tail has caught up): their groups are neither gone nor new.
    unsampled: frozenset[GroupType] = frozenset()
    # Partitions whose log offsets Kafka did not answer this cycle, carried as last answered
    stale_partitions: frozenset[TopicPartition] = frozenset()
    offsets_from_tail: bool = False  # the committed offsets came from the offsets-topic tail, not OffsetFetch
    # {stored name: the id Kafka knows} for the groups whose id is not plain (monitor.names)
    full_ids: Mapping[str, str] = field(default_factory=dict)

    @property
    def log_ends_at(self) -> int:
        """When the log ends were read: sampling reads them last, up to its whole duration after taken_at (a
        busy cluster's second), so the log-end history stamps them here (the store: taken_at + sampling_ms)."""
        return self.taken_at + self.duration_ms

    @functools.cached_property
    def partitions_per_topic(self) -> Counter[str]:
        """How many partitions each topic has (0 for one not fetched), counted once: a count per group of a
        restarted collector made 1,000 groups on 20,000 partitions cost 2.5 CPU-s."""
        return Counter(tp.topic for tp in self.partitions)


class EventKind(enum.StrEnum):
    """What changed between two snapshots of a group."""

    GROUP_APPEARED = "group_appeared"
    GROUP_DISAPPEARED = "group_disappeared"
    STATE_CHANGED = "state_changed"
    MEMBER_JOINED = "member_joined"
    MEMBER_LEFT = "member_left"
    ASSIGNMENT_CHANGED = "assignment_changed"
    COORDINATOR_MOVED = "coordinator_moved"
    REBALANCE_STARTED = "rebalance_started"
    REBALANCE_COMPLETED = "rebalance_completed"
    OFFSET_REWIND = "offset_rewind"
    PARTITIONS_ADDED = "partitions_added"


@dataclass(frozen=True)
class Event:
    """One change seen in a group; `detail` holds kind-specific plain values."""

    at: int
    group_id: str
    kind: EventKind
    detail: dict = field(default_factory=dict)


class Trigger(enum.StrEnum):
    """The likely cause of a rebalance, from the evidence available."""

    MEMBER_JOINED = "member_joined"
    MEMBER_LEFT = "member_left"  # left cleanly (LeaveGroup)
    SESSION_TIMEOUT = "session_timeout"  # died without leaving
    POLL_TIMEOUT = "poll_timeout"  # max.poll.interval.ms exceeded
    SUBSCRIPTION_CHANGED = "subscription_changed"
    PARTITIONS_ADDED = "partitions_added"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class MemberRef:
    """Who joined or left: enough to find the process."""

    member_id: str
    client_id: str
    host: str
    instance_id: str | None = None


@dataclass(frozen=True)
class Rebalance:
    """One rebalance of one group, from polling, the offsets topic, or both."""

    group_id: str
    started_at: int
    ended_at: int | None  # None while still in progress
    protocol: str  # "eager" | "cooperative" | "consumer"
    trigger: Trigger = Trigger.UNKNOWN
    members_before: int = 0
    members_after: int = 0
    joined: tuple[MemberRef, ...] = ()
    left: tuple[MemberRef, ...] = ()
    partitions_moved: int = 0
    generation_before: int | None = None
    generation_after: int | None = None
    source: str = "polling"  # "polling" | "offsets_topic" | "both"

    @property
    def duration_ms(self) -> int | None:
        return None if self.ended_at is None else self.ended_at - self.started_at


# -- alerts: the episodes the alert engine keeps, silences, notifications ---------------------

PENDING, FIRING, RESOLVED = "pending", "firing", "resolved"


@dataclass(frozen=True)
class Alert:
    rule: str
    cluster: str
    group_id: str
    topic: str
    state: str
    severity: str
    started_at: int
    fired_at: int | None = None
    resolved_at: int | None = None
    last_notified_at: int | None = None
    summary: str = ""
    detail: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    acked_at: int | None = None
    acked_by: str | None = None
    id: int | None = None

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.rule, self.cluster, self.group_id, self.topic)


@dataclass(frozen=True)
class Silence:
    """Mute alerts whose fields all match: keys rule, cluster, group, topic, severity or label.NAME (regexes)."""

    matchers: dict[str, str]
    until: int
    id: int | None = None
    comment: str = ""
    created_by: str = ""

    def matches(self, alert: Alert, now: int) -> bool:
        if now >= self.until:
            return False
        fields = {
            "rule": alert.rule,
            "cluster": alert.cluster,
            "group": alert.group_id,
            "topic": alert.topic,
            "severity": alert.severity,
            **{f"label.{k}": v for k, v in alert.labels.items()},
        }
        try:
            return all(re.fullmatch(pattern, fields.get(name, "") or "") for name, pattern in self.matchers.items())
        except re.error:  # a malformed silence mutes nothing rather than breaking the cycle
            return False


@dataclass(frozen=True)
class Notification:
    key: tuple[str, str, str, str]
    kind: str  # firing | repeat | resolved
    channels: tuple[str, ...]
