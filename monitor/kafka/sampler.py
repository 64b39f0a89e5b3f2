"""The sampler: one pass over a cluster through the admin API, a ClusterSnapshot per collector cycle.

Read-only toward the cluster: admin calls only (list, describe, fetch offsets),
never a join, commit or reset on behalf of a monitored group. Committed offsets
are fetched BEFORE the log offsets, so a sample can never show negative lag from
skew between the two requests.
"""

from __future__ import annotations

import concurrent.futures
import functools
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    IsolationLevel,
    KafkaError,
    KafkaException,
)
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from monitor.clock import wall_ms
from monitor.kafka.common import OFFSETS_TOPIC, compute_kafka_error, quiet_logger
from monitor.names import full_id, is_cut_at_nul, is_stand_in, plain_text, stored_name
from monitor.models import (
    ClusterSnapshot,
    GroupSnapshot,
    GroupState,
    GroupType,
    KafkaUnavailable,
    Member,
    PartitionOffsets,
    TopicPartition,
    intern_tp,
)
from monitor.ports import ShareTail, Tail
from monitor.shard import coordinator_partition

DESCRIBE_BATCH = 200  # groups per DescribeGroups call
OFFSETS_IN_FLIGHT = 500  # concurrent OffsetFetch calls (librdkafka takes one group per call)
UNCOMMITTED = -1001  # librdkafka's OFFSET_INVALID: the group has no commit for that partition

_STATES = {
    ConsumerGroupState.STABLE: GroupState.STABLE,
    ConsumerGroupState.PREPARING_REBALANCING: GroupState.PREPARING_REBALANCE,
    ConsumerGroupState.COMPLETING_REBALANCING: GroupState.COMPLETING_REBALANCE,
    ConsumerGroupState.EMPTY: GroupState.EMPTY,
    ConsumerGroupState.DEAD: GroupState.DEAD,
    ConsumerGroupState.UNKNOWN: GroupState.UNKNOWN,
}
# What librdkafka says when no request can be answered: every broker refused or unresolvable, or refused us.
CUT_OFF = (KafkaError._ALL_BROKERS_DOWN, KafkaError._AUTHENTICATION)
_TYPES = {ConsumerGroupType.CLASSIC: GroupType.CLASSIC, ConsumerGroupType.CONSUMER: GroupType.CONSUMER}
LOG_GROUP_TYPES = frozenset({GroupType.SHARE, GroupType.STREAMS})  # only the offsets-topic tail sees these
UNLISTABLE = "its id has a NUL, which Kafka's C client cannot send: offsets from the offsets topic only"


def convert_state(
    state: ConsumerGroupState, group_type: GroupType, members: Iterable[Member]
) -> tuple[GroupState, bool]:
    """librdkafka's state, with KIP-848's Assigning/Reconciling restored; returns (state, inferred).

    librdkafka reports both KIP-848 states as UNKNOWN. A member whose target
    assignment differs from its current one is reconciling; with none differing
    the coordinator is still computing the new target, i.e. assigning.
    """
    mapped = _STATES.get(state, GroupState.UNKNOWN)
    if mapped is not GroupState.UNKNOWN or group_type is not GroupType.CONSUMER:
        return mapped, False
    members = list(members)
    if not members:
        return GroupState.UNKNOWN, False
    reconciling = any(
        m.target_assignment is not None and set(m.target_assignment) != set(m.assignment) for m in members
    )
    return (GroupState.RECONCILING if reconciling else GroupState.ASSIGNING), True


def convert_member(desc) -> Member:
    def tps(assignment) -> tuple[TopicPartition, ...]:
        return tuple(sorted(intern_tp(tp.topic, tp.partition) for tp in assignment.topic_partitions))

    return Member(
        member_id=plain_text(desc.member_id),
        client_id=plain_text(desc.client_id),
        host=plain_text(desc.host.lstrip("/")),
        instance_id=plain_text(desc.group_instance_id) or None,
        assignment=tps(desc.assignment) if desc.assignment else (),
        target_assignment=tps(desc.target_assignment) if desc.target_assignment else None,
    )


def convert_description(desc, committed: dict[TopicPartition, int | None], name: str) -> GroupSnapshot:
    """A described group plus its committed offsets -> GroupSnapshot, known by `name` (its stored name).

    Partitions assigned to a member but never committed are kept with None, so
    the UI can say "no commit yet" instead of hiding them.
    """
    members = tuple(sorted((convert_member(m) for m in desc.members), key=lambda m: m.member_id))
    group_type = _TYPES.get(desc.type, GroupType.UNKNOWN)
    state, inferred = convert_state(desc.state, group_type, members)
    committed = dict(committed)
    for member in members:
        for tp in member.assignment:
            committed.setdefault(tp, None)
    return GroupSnapshot(
        group_id=name,
        state=state,
        type=group_type,
        protocol_type="consumer",
        assignor=plain_text(desc.partition_assignor) or "",
        coordinator=desc.coordinator.id if desc.coordinator else None,
        members=members,
        committed=committed,
        state_inferred=inferred,
    )


def compute_group_on_wanted_topics(group: GroupSnapshot, wants_topic: Callable[[str], bool]) -> GroupSnapshot:
    """The group with only the partitions of wanted topics (LAGMON_TOPIC_ALLOW/DENY).

    Committed offsets and the members' assignments are both cut, so a partition of a
    topic left out is neither measured nor owned; the members stay, and so does a group
    whose topics are all left out. Its state was inferred from the whole assignment before.
    """

    def keep(tps: tuple[TopicPartition, ...]) -> tuple[TopicPartition, ...]:
        return tuple(tp for tp in tps if wants_topic(tp.topic))

    committed = {tp: offset for tp, offset in group.committed.items() if wants_topic(tp.topic)}
    members = tuple(
        replace(
            m,
            assignment=keep(m.assignment),
            target_assignment=None if m.target_assignment is None else keep(m.target_assignment),
        )
        for m in group.members
    )
    if len(committed) == len(group.committed) and members == group.members:
        return group
    return replace(group, committed=committed, members=members)


class KafkaSampler:
    """Takes ClusterSnapshots of one cluster through the admin API."""

    def __init__(
        self,
        config: dict[str, str],
        cluster: str,
        wants_group: Callable[[str], bool] = lambda g: True,
        timeout_s: float = 10.0,
        fetch_last_stable: bool = True,
        offsets_tail: Tail | None = None,
        wants_topic: Callable[[str], bool] | None = None,
        share_tail: ShareTail | None = None,
        tail_wait_s: float = 1.0,
    ):
        self.cluster = cluster
        # LAGMON_TOPIC_ALLOW/DENY (None: every topic), asked once per topic name
        self.wants_topic = None if wants_topic is None else functools.lru_cache(maxsize=1 << 14)(wants_topic)
        # An OffsetsTail (monitor.tail): once it has read __consumer_offsets up to the end offsets
        # taken at the start of a cycle, its committed offsets replace one OffsetFetch per group.
        self.offsets_tail = offsets_tail
        # How long a cycle waits for the tail to read that far: OffsetFetch for every group costs more.
        self.tail_wait_s = tail_wait_s
        # Share and streams groups come from the tail alone (librdkafka cannot list them); a share
        # group's lag also needs the share-state tail (monitor.share_tail).
        self.share_tail = share_tail
        self.wants_group = wants_group
        self.timeout_s = timeout_s
        self.fetch_last_stable = fetch_last_stable
        self._last_client_error: str | None = None
        self._lock = threading.Lock()
        self._config = {**config, "error_cb": self._on_error, "logger": quiet_logger(), "log_level": 3}
        self.admin = AdminClient(self._config)
        self._cut_off: KafkaError | None = None  # why this client can reach no broker (see `unreachable`)
        self._used = False  # a cycle has begun with this client
        self._suspect = False  # the last cycle had errors: start the next with a fresh client
        self.bootstrap = config.get("bootstrap.servers", "?")

    def _ready_client(self) -> None:
        """A new client after a cycle with errors; else the one that answered, forgetting an outage it
        reported since (over by now, or reported again as the cycle waits: `_list_groups`)."""
        if self._suspect:
            self.admin = AdminClient(self._config)
            self._cut_off = None
        elif self._used:
            self.unreachable()
            self._cut_off = None
        self._used = True

    def _on_error(self, err: KafkaError) -> None:
        """Remember librdkafka's reason; "all brokers are down" must not hide the specific one before it."""
        with self._lock:
            if err.code() != KafkaError._ALL_BROKERS_DOWN or self._last_client_error is None:
                self._last_client_error = err.str()
            if self._cut_off is None and err.code() in CUT_OFF:
                self._cut_off = err

    def unreachable(self) -> bool:
        """librdkafka told this client that no broker can be reached (refused, unresolvable) or that it was
        refused (authentication): no request of the cycle can be answered, so none waits out its timeout."""
        self.admin.poll(0)  # error_cb only runs from poll()
        return self._cut_off is not None

    def fetch_snapshot(self, now_ms: Callable[[], int] = wall_ms) -> ClusterSnapshot:
        """One full pass: list, describe, committed offsets, then log start/end offsets.

        After a cycle with errors the next one uses a new AdminClient: librdkafka's
        admin client can keep timing out on a broker that left and came back
        (librdkafka#4605), while a fresh one answers at once.
        """
        self._ready_client()
        started = time.monotonic()
        taken_at = now_ms()
        errors: list[str] = []
        self._suspect = True  # until this cycle completes without errors
        tail = self.offsets_tail
        tail_ends = (
            fetch_offsets_topic_ends(self.admin, tail.partitions, self.timeout_s)
            if tail is not None and tail.partitions
            else None
        )
        # Past this edge a group is known by its stored name (monitor.names); Kafka is asked by its id.
        listings = {g.group_id: g for g in self._list_groups(errors) if self.wants_group(stored_name(g.group_id))}
        listed_whole = not errors
        metadata = self._metadata()
        group_ids = sorted(listings)
        names = {g: stored_name(g) for g in group_ids}
        # An Empty group has no members to describe: its state and type come with the listing
        # and its coordinator from metadata, which saves a round trip per idle group.
        idle = {g for g, listing in listings.items() if listing.state == ConsumerGroupState.EMPTY}
        descriptions, not_consumer = self._describe([g for g in group_ids if g not in idle], errors)
        committed = self._committed_from_tail(tail, tail_ends, list(names.values()), errors, self.tail_wait_s)
        from_tail = committed is not None
        if committed is None:
            committed = {names[g]: offsets for g, offsets in self._committed_offsets(group_ids, errors).items()}
        coordinators = _offsets_topic_leaders(metadata)
        groups: dict[str, GroupSnapshot] = {}
        for group_id in group_ids:
            name, desc = names[group_id], descriptions.get(group_id)
            if name not in committed:  # its OffsetFetch failed (in `errors`): not answered, not empty
                continue
            offsets = committed[name]
            if group_id in idle:
                leader = coordinators[coordinator_partition(group_id, len(coordinators))] if coordinators else None
                groups[name] = GroupSnapshot(
                    name,
                    GroupState.EMPTY,
                    _TYPES.get(listings[group_id].type, GroupType.UNKNOWN),
                    coordinator=leader,
                    committed=offsets,
                )
            elif group_id in not_consumer:  # e.g. Connect: neither members nor assignments to compare
                groups[name] = GroupSnapshot(
                    name,
                    GroupState.UNKNOWN,
                    protocol_type="unknown",
                    committed=offsets,
                    note=plain_text(not_consumer[group_id]),
                )
            elif desc is not None:
                groups[name] = convert_description(desc, offsets, name)
        if from_tail and listed_whole:  # a listing that failed in part leaves groups out for no reason of
            self._add_unlistable(groups, committed)  # their own: compute_carried keeps them as last answered
        unsampled = frozenset()
        if tail is not None and not tail.disabled:
            log_groups = self._log_groups(tail, coordinators) if from_tail else None
            if log_groups is None:
                unsampled = LOG_GROUP_TYPES  # the tail has not caught up yet: they are unknown, not gone
            else:
                groups |= log_groups
        if self.wants_topic is not None:  # before the log offsets: none are fetched for topics left out
            groups = {g: compute_group_on_wanted_topics(snap, self.wants_topic) for g, snap in groups.items()}
        partitions = self._log_offsets(metadata, {tp for g in groups.values() for tp in g.committed}, errors)
        self._suspect = bool(errors)
        return ClusterSnapshot(
            self.cluster,
            taken_at,
            groups,
            partitions,
            duration_ms=int((time.monotonic() - started) * 1000),
            errors=tuple(errors),
            unsampled=unsampled,
            offsets_from_tail=from_tail,
            full_ids={name: full for name in groups if is_stand_in(name) and (full := full_id(name)) is not None},
        )

    @staticmethod
    def _committed_from_tail(
        tail: Tail | None, ends: dict[int, int] | None, groups: list[str], errors: list[str], wait_s: float
    ):
        """The tail's committed offsets once it has read to `ends`; with `ends` unanswered (a leader of
        __consumer_offsets moving), as far as it has read, since the OffsetFetch calls otherwise made then
        are what crashes librdkafka when a coordinator stops (docs/production.md); None: OffsetFetch."""
        if tail is None or not tail.partitions:
            return None
        if ends:
            return tail.committed_when_caught_up(ends, groups, wait_s)
        committed = tail.committed_as_read(groups)
        if committed is not None:
            errors.append("offsets-topic end offsets not answered: committed offsets as far as the tail has read")
        return committed

    def _add_unlistable(self, groups: dict[str, GroupSnapshot], committed: dict) -> None:
        """The groups only the tail can name: librdkafka lists an id cut at its NUL, and that cut id
        (a group with no offsets of its own) is left out for the whole one."""
        for name, offsets in committed.items():
            if name in groups or not self.wants_group(name):
                continue
            groups[name] = GroupSnapshot(name, GroupState.UNKNOWN, committed=offsets, note=UNLISTABLE)
            for cut in [g for g, snap in groups.items() if not snap.committed and is_cut_at_nul(g, name)]:
                del groups[cut]

    def _log_groups(self, tail: Tail, coordinators: list[int | None]) -> dict[str, GroupSnapshot] | None:
        """The share and streams groups the tail rebuilt from their coordinators' records; None if it cannot say."""
        found = tail.log_group_snapshots(
            self.share_tail,
            # a stand-in name does not place the group: its coordinator is not known
            lambda g: None
            if not coordinators or is_stand_in(g)
            else coordinators[coordinator_partition(g, len(coordinators))],
        )
        return None if found is None else {g: snap for g, snap in found.items() if self.wants_group(g)}

    def _list_groups(self, errors: list[str]):
        """The cycle's first request: it fails as soon as librdkafka says no broker can answer it."""
        future = self.admin.list_consumer_groups(request_timeout=self.timeout_s)
        while not concurrent.futures.wait([future], timeout=0.1).done:
            if self.unreachable():
                raise self._unavailable(self._cut_off)
        try:
            result = future.result()
        except KafkaException as e:
            raise self._unavailable(e.args[0]) from e
        if result.errors and not result.valid:  # librdkafka reports an unreachable cluster here, not by raising
            raise self._unavailable(result.errors[0])
        errors.extend(f"list groups: {e.str()}" for e in result.errors)
        return result.valid

    def _describe(self, group_ids: list[str], errors: list[str]) -> tuple[dict[str, object], dict[str, str]]:
        """({group id: description}, {group id: why it is not a consumer group}); other failures go to `errors`."""
        out: dict[str, object] = {}
        not_consumer: dict[str, str] = {}
        futures = {}  # every batch in flight at once: librdkafka spreads them over the coordinators
        for start in range(0, len(group_ids), DESCRIBE_BATCH):
            futures.update(
                self.admin.describe_consumer_groups(
                    group_ids[start : start + DESCRIBE_BATCH], request_timeout=self.timeout_s
                )
            )
        for group_id, future in futures.items():
            try:
                out[group_id] = future.result()
            except KafkaException as e:
                err = e.args[0]
                # librdkafka says it with the catch-all _INVALID_ARG ("GroupId G is not a consumer group
                # (connect)."): its words are all there is to go on, and they stay here at the edge
                if (
                    err.code() in (KafkaError.INCONSISTENT_GROUP_PROTOCOL, KafkaError.GROUP_ID_NOT_FOUND)
                    or "not a consumer group" in err.str()
                    or "protocol type" in err.str()
                ):
                    not_consumer[group_id] = f"not a consumer group: {err.str()}"
                else:
                    errors.append(f"describe {stored_name(group_id)}: {err.str()}")
        return out, not_consumer

    def _committed_offsets(
        self, group_ids: list[str], errors: list[str]
    ) -> dict[str, dict[TopicPartition, int | None]]:
        """Committed offsets per group, OFFSETS_IN_FLIGHT groups at a time (one group per request)."""
        out: dict[str, dict[TopicPartition, int | None]] = {}
        for start in range(0, len(group_ids), OFFSETS_IN_FLIGHT):
            futures = {}
            for group_id in group_ids[start : start + OFFSETS_IN_FLIGHT]:
                futures.update(
                    self.admin.list_consumer_group_offsets(
                        [ConsumerGroupTopicPartitions(group_id)], request_timeout=self.timeout_s
                    )
                )
            for group_id, future in futures.items():
                try:
                    result = future.result()
                except KafkaException as e:
                    errors.append(f"offsets {stored_name(group_id)}: {e.args[0].str()}")
                    continue
                failed = next((tp for tp in result.topic_partitions if tp.error), None)
                if failed is not None:  # an answer in part: the group is not answered, not missing partitions
                    errors.append(f"offsets {stored_name(group_id)}: {failed.topic} [{failed.partition}]: {failed.error.str()}")
                    continue
                out[group_id] = {
                    intern_tp(tp.topic, tp.partition): (None if tp.offset == UNCOMMITTED else tp.offset)
                    for tp in result.topic_partitions
                }
        return out

    def _metadata(self):
        try:
            return self.admin.list_topics(timeout=self.timeout_s)
        except KafkaException as e:
            raise self._unavailable(e.args[0]) from e

    def _log_offsets(
        self, metadata, tps: set[TopicPartition], errors: list[str]
    ) -> dict[TopicPartition, PartitionOffsets]:
        """Log start, high watermark and (optionally) last stable offset for every partition.

        Every partition of every involved topic is asked for (one metadata call),
        so partitions added to a topic show up before any group commits to them;
        partitions of topics that no longer exist are left out and named.
        """
        if not tps:
            return {}
        existing = _partitions_of(metadata, {tp.topic for tp in tps})
        gone = sorted({tp.topic for tp in tps} - {tp.topic for tp in existing})
        if gone:
            errors.append(f"topics no longer exist: {', '.join(gone)}")
        tps = existing
        if not tps:
            return {}
        starts = self._list_offsets(tps, OffsetSpec.earliest(), IsolationLevel.READ_UNCOMMITTED, errors)
        ends = self._list_offsets(tps, OffsetSpec.latest(), IsolationLevel.READ_UNCOMMITTED, errors)
        stables = (
            self._list_offsets(tps, OffsetSpec.latest(), IsolationLevel.READ_COMMITTED, errors)
            if self.fetch_last_stable
            else {}
        )
        # a partition without its start or end is unanswered (its last answer is carried, marked stale),
        # never stored with a start made up from its end
        return {tp: PartitionOffsets(starts[tp], ends[tp], stables.get(tp)) for tp in tps if tp in ends and tp in starts}

    def _list_offsets(self, tps, spec, isolation, errors: list[str]) -> dict[TopicPartition, int]:
        request = {KafkaTopicPartition(tp.topic, tp.partition): spec for tp in tps}
        futures = self.admin.list_offsets(request, isolation_level=isolation, request_timeout=self.timeout_s)
        out = {}
        failed = 0
        for ktp, future in futures.items():
            try:
                offset = future.result().offset
            except KafkaException as e:
                failed += 1
                last = e.args[0].str()
                continue
            if offset < 0:  # while its leader moves librdkafka may answer -1001 without an error: no answer
                failed += 1
                last = f"{ktp.topic} [{ktp.partition}]: no offset in the answer ({offset})"
                continue
            out[intern_tp(ktp.topic, ktp.partition)] = offset
        if failed:
            errors.append(f"log offsets: {failed} partition(s) failed, e.g. {last}")
        return out

    def _unavailable(self, err: KafkaError) -> KafkaUnavailable:
        """A one-line reason, with librdkafka's own complaint (refused, auth failed) when it gave one."""
        self.admin.poll(0.1)  # error_cb only runs from poll()
        with self._lock:
            detail = self._last_client_error
        reason = err.str()
        if detail and detail not in reason:
            reason = f"{reason} ({detail})"
        return compute_kafka_error(err, f"cannot sample Kafka at {self.bootstrap}: {reason}")

    def close(self) -> None:
        """AdminClient has no close(); dropping the reference lets librdkafka shut down."""
        self.admin = None


def _partitions_of(metadata, topics: set[str]) -> set[TopicPartition]:
    out = set()
    for topic in topics:
        meta = metadata.topics.get(topic)
        if meta is not None and meta.error is None:
            out.update(intern_tp(topic, p) for p in meta.partitions)
    return out


def _offsets_topic_leaders(metadata) -> list[int | None]:
    """Leader node of each __consumer_offsets partition, by partition number ([] if not created yet)."""
    topic = metadata.topics.get("__consumer_offsets")
    if topic is None or topic.error is not None:
        return []
    return [(topic.partitions[p].leader if topic.partitions[p].leader >= 0 else None) for p in sorted(topic.partitions)]


def fetch_broker_ids(bootstrap: str, timeout_s: float = 2.0) -> tuple[set[int], int]:
    """(ids of the brokers in metadata, controller id); raises KafkaException while unreachable."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": quiet_logger()})
    metadata = admin.list_topics(timeout=timeout_s)
    return set(metadata.brokers), metadata.controller_id


def fetch_under_replicated(bootstrap: str, timeout_s: float = 2.0) -> list[tuple[str, int]]:
    """(topic, partition) of every partition with a replica out of sync; raises KafkaException while unreachable."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": quiet_logger()})
    topics = admin.list_topics(timeout=timeout_s).topics.values()
    return [(t.topic, p.id) for t in topics for p in t.partitions.values() if set(p.isrs) != set(p.replicas)]


def fetch_offsets_topic_ends(
    admin: AdminClient, partitions: list[int], timeout_s: float = 10.0
) -> dict[int, int] | None:
    """High watermark of every __consumer_offsets partition (None if any could not be fetched)."""
    request = {KafkaTopicPartition(OFFSETS_TOPIC, p): OffsetSpec.latest() for p in partitions}
    try:
        futures = admin.list_offsets(
            request, isolation_level=IsolationLevel.READ_UNCOMMITTED, request_timeout=timeout_s
        )
        ends = {ktp.partition: f.result().offset for ktp, f in futures.items()}
    except KafkaException:
        return None
    return ends if min(ends.values(), default=0) >= 0 else None  # -1001: a leader moving, not an answer
