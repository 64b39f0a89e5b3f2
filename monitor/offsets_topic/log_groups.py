"""LogGroups: share and streams groups rebuilt from the coordinator's own records (pure).

librdkafka's admin API neither lists nor describes share groups (KIP-932) or
streams groups (KIP-1071), but their coordinator writes everything it knows to
`__consumer_offsets`, as it does for KIP-848 groups: the group epoch, each member
(metadata, current and target assignment), the target assignment epoch, and for
streams groups the topology. Replayed from the start, as the coordinator replays
them when it loads a partition, they give the group as its coordinator holds it;
`compute_snapshot` turns one into the GroupSnapshot every other part reads.

Group state follows the coordinator's rules (ShareGroup / StreamsGroup in Kafka 4.3):
a share group is Empty without members, else Stable; a streams group is Empty
without members, NotReady before its topology is validated, Assigning while the
target assignment is behind the group epoch, Reconciling while a member has not
reached it, else Stable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from monitor.models import (
    GroupSnapshot,
    GroupState,
    GroupType,
    Member,
    SharePartition,
    StreamsMember,
    StreamsTasks,
    Subtopology,
    Task,
    TopicPartition,
    Topology,
    intern_tp,
)
from monitor.names import plain_text
from monitor.offsets_topic.decoder import resolve_topic_ids
from monitor.offsets_topic.records import (
    ShareGroupCurrentMemberAssignment,
    ShareGroupMemberMetadata,
    ShareGroupMetadata,
    ShareGroupStatePartitionMetadata,
    ShareGroupTargetAssignmentMember,
    ShareGroupTargetAssignmentMetadata,
    StreamsGroupCurrentMemberAssignment,
    StreamsGroupMemberMetadata,
    StreamsGroupMetadata,
    StreamsGroupTargetAssignmentMember,
    StreamsGroupTargetAssignmentMetadata,
    StreamsGroupTopology,
)

SHARE_RECORDS = (
    ShareGroupMetadata,
    ShareGroupMemberMetadata,
    ShareGroupTargetAssignmentMetadata,
    ShareGroupTargetAssignmentMember,
    ShareGroupCurrentMemberAssignment,
    ShareGroupStatePartitionMetadata,
)
STREAMS_RECORDS = (
    StreamsGroupMetadata,
    StreamsGroupMemberMetadata,
    StreamsGroupTargetAssignmentMetadata,
    StreamsGroupTargetAssignmentMember,
    StreamsGroupCurrentMemberAssignment,
    StreamsGroupTopology,
)
LOG_GROUP_RECORDS = SHARE_RECORDS + STREAMS_RECORDS
_METADATA = (ShareGroupMemberMetadata, StreamsGroupMemberMetadata)
_CURRENT = (ShareGroupCurrentMemberAssignment, StreamsGroupCurrentMemberAssignment)
_TARGET = (ShareGroupTargetAssignmentMember, StreamsGroupTargetAssignmentMember)
_GROUP = (ShareGroupMetadata, StreamsGroupMetadata)
_ASSIGNMENT_EPOCH = (ShareGroupTargetAssignmentMetadata, StreamsGroupTargetAssignmentMetadata)
STREAMS_MEMBER_STABLE = 1  # a streams member's current-assignment state with nothing left to reconcile


@dataclass
class LogGroup:
    """One share or streams group as its records say, latest record per key."""

    type: GroupType
    epoch: int | None = None
    assignment_epoch: int | None = None
    validated_topology_epoch: int | None = None
    metadata: dict = field(default_factory=dict)  # member id -> member metadata record
    current: dict = field(default_factory=dict)  # member id -> current assignment record
    target: dict = field(default_factory=dict)  # member id -> target assignment record
    topology: StreamsGroupTopology | None = None


class LogGroups:
    """Every share and streams group in the records applied so far."""

    def __init__(self) -> None:
        self.groups: dict[str, LogGroup] = {}
        self.topic_names: dict[str, str] = {}  # topic id -> name, from the share groups' partition metadata
        self.versions: dict[str, int] = {}  # group -> records applied: what changed since a snapshot was made

    def apply(self, r) -> None:
        """Fold one decoded record of LOG_GROUP_RECORDS."""
        self.versions[r.group] = self.versions.get(r.group, 0) + 1
        kind = GroupType.SHARE if isinstance(r, SHARE_RECORDS) else GroupType.STREAMS
        if isinstance(r, ShareGroupStatePartitionMetadata):
            if not r.tombstone:
                for t in (*r.initializing_topics, *r.initialized_topics, *r.deleting_topics):
                    self.topic_names[t.topic_id] = t.topic_name
            return
        if isinstance(r, _GROUP) and r.tombstone:  # the group was deleted
            self.groups.pop(r.group, None)
            return
        g = self.groups.get(r.group)
        if g is None:
            if r.tombstone:
                return
            g = self.groups[r.group] = LogGroup(kind)
        if isinstance(r, _GROUP):
            g.epoch = r.epoch
            g.validated_topology_epoch = getattr(r, "validated_topology_epoch", None)
        elif isinstance(r, _ASSIGNMENT_EPOCH):
            g.assignment_epoch = None if r.tombstone else r.assignment_epoch
        elif isinstance(r, StreamsGroupTopology):
            g.topology = None if r.tombstone else r
        else:
            table = g.metadata if isinstance(r, _METADATA) else g.current if isinstance(r, _CURRENT) else g.target
            if r.tombstone:
                table.pop(r.member_id, None)
            else:
                table[r.member_id] = r


def compute_state(g: LogGroup) -> GroupState:
    """The group's state by its coordinator's rules (see the module docstring)."""
    if not g.metadata:
        return GroupState.EMPTY
    if g.type is GroupType.SHARE:
        return GroupState.STABLE
    if g.topology is None or (
        g.validated_topology_epoch is not None and g.validated_topology_epoch != g.topology.epoch
    ):
        return GroupState.NOT_READY
    if g.assignment_epoch is None or g.epoch is None or g.assignment_epoch < g.epoch:
        return GroupState.ASSIGNING
    for member_id in g.metadata:
        cur = g.current.get(member_id)
        if cur is None or cur.member_epoch != g.assignment_epoch or cur.state != STREAMS_MEMBER_STABLE:
            return GroupState.RECONCILING
    return GroupState.STABLE


def convert_topology(t: StreamsGroupTopology) -> Topology:
    return Topology(
        t.epoch,
        tuple(
            Subtopology(
                s.subtopology_id,
                tuple(s.source_topics),
                tuple(r.name for r in s.repartition_source_topics),
                tuple(s.repartition_sink_topics),
                tuple(c.name for c in s.state_changelog_topics),
            )
            for s in t.subtopologies
        ),
    )


def _tasks(ids) -> tuple[Task, ...]:
    return tuple(sorted(Task(t.subtopology_id, p) for t in ids for p in t.partitions))


def convert_tasks(r) -> StreamsTasks:
    """Active, standby and warm-up tasks of a current or target streams assignment record."""
    return StreamsTasks(_tasks(r.active_tasks), _tasks(r.standby_tasks), _tasks(r.warmup_tasks))


def compute_task_partitions(tasks: tuple[Task, ...], topology: Topology | None) -> tuple[TopicPartition, ...]:
    """The input partitions active tasks read: partition p of each source topic of their sub-topology."""
    if topology is None:
        return ()
    sources = {s.subtopology_id: (*s.source_topics, *s.repartition_source_topics) for s in topology.subtopologies}
    return tuple(sorted({intern_tp(topic, t.partition) for t in tasks for topic in sources.get(t.subtopology, ())}))


def compute_snapshot(
    group_id: str,
    g: LogGroup,
    topic_names: dict[str, str],
    committed: dict[TopicPartition, int],
    share: dict[TopicPartition, SharePartition] | None,
    coordinator: int | None,
) -> GroupSnapshot:
    """One share or streams group as a GroupSnapshot.

    Streams groups commit offsets like consumer groups (`committed`). For a share group
    `committed` is ignored: each share-partition's `position` stands in for it, so lag
    is Kafka's share-partition lag everywhere lag is computed. Partitions a member is
    assigned but no offset or state exists for are kept with None ("nothing yet").
    """
    topology = convert_topology(g.topology) if g.topology is not None else None
    members = []
    for member_id, meta in sorted(g.metadata.items()):
        cur, target = g.current.get(member_id), g.target.get(member_id)
        streams = None
        if g.type is GroupType.SHARE:
            owned = resolve_topic_ids(cur.assigned_partitions, topic_names)[0] if cur else ()
            wanted = resolve_topic_ids(target.topic_partitions, topic_names)[0] if target else None
        else:
            tasks = convert_tasks(cur) if cur else StreamsTasks()
            target_tasks = convert_tasks(target) if target else None
            owned = compute_task_partitions(tasks.active, topology)
            wanted = None if target_tasks is None else compute_task_partitions(target_tasks.active, topology)
            endpoint = meta.user_endpoint
            streams = StreamsMember(
                process_id=meta.process_id,
                topology_epoch=meta.topology_epoch,
                tasks=tasks,
                target_tasks=target_tasks,
                user_endpoint=f"{endpoint.host}:{endpoint.port}" if endpoint and endpoint.host else None,
            )
        members.append(
            Member(
                member_id=plain_text(member_id),  # client-chosen text: without NULs, any store takes it
                client_id=plain_text(meta.client_id or ""),
                host=plain_text((meta.client_host or "").lstrip("/")),
                instance_id=plain_text(getattr(meta, "instance_id", None)),
                assignment=tuple(sorted(owned)),
                target_assignment=None if wanted is None else tuple(sorted(wanted)),
                rack=plain_text(meta.rack_id),
                subscribed=tuple(getattr(meta, "subscribed_topic_names", ())),
                epoch=cur.member_epoch if cur else None,
                streams=streams,
            )
        )
    note = None
    if g.type is GroupType.SHARE:
        if share is None:
            note = "share-partition state not read (yet): lag needs Read on __share_group_state"
        share = dict(share or {})
        offsets: dict[TopicPartition, int | None] = {tp: sp.position for tp, sp in share.items()}
    else:
        share, offsets = None, dict(committed)
    for m in members:
        for tp in m.assignment:
            offsets.setdefault(tp, None)
    return GroupSnapshot(
        group_id=group_id,
        state=compute_state(g),
        type=g.type,
        protocol_type=str(g.type),
        coordinator=coordinator,
        members=tuple(members),
        committed=offsets,
        note=note,
        epoch=g.epoch,
        assignment_epoch=g.assignment_epoch,
        share=share,
        topology=topology,
    )
