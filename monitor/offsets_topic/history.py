"""TailState: `__consumer_offsets` records folded into commits, generations and rebalances (pure).

The group coordinator rebuilds its state by replaying its partitions from the
start; so does the tail, which makes the committed offsets it holds exactly
what OffsetFetch would answer once it has read up to the end. What is *new*
(not stored before) is decided per record by `TailState.is_new`: after a
restart, records below the stored position per partition are replayed only
to rebuild the state, so nothing is stored twice and nothing is skipped.

Rebalances, from the records alone:
- Classic: every completed rebalance writes a GroupMetadata record with a new
  generation. A cooperative rebalance takes two generations (the first only
  revokes, leaving partitions of still-consumed topics unowned): those two are
  one rebalance, open after the first and completed by the second. The tail
  sees no start of a classic rebalance, so started_at is the first of its
  generations' timestamps; merging with polling gives the real start.
- KIP-848: a group epoch record (type 3) starts one (membership or
  subscriptions changed); it completes when every member's current assignment
  (type 8) has reached the target assignment epoch, Stable, nothing pending.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from monitor.models import DecodeError, Rebalance, TopicPartition, Trigger, intern_tp
from monitor.names import is_stand_in
from monitor.offsets_topic.decoder import decode, decode_usual_commit, resolve_topic_ids
from monitor.offsets_topic.log_groups import LOG_GROUP_RECORDS, LogGroups
from monitor.offsets_topic.records import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupPartitionMetadata,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    GroupMetadata,
    OffsetCommit,
    Skipped,
    TopicIdPartitions,
)
from monitor.rebalancing.members import member_key, member_ref, orphans, owners

_new_tuple = tuple.__new__  # a NamedTuple without its Python-level __new__, where one is made per record
DELETED = -1  # CommitRow.offset of a tombstone: the offset was deleted or expired
MAX_ERRORS = 5  # decode errors kept per update (all are counted)


class TailRecord(NamedTuple):
    """One raw record as the Kafka edge hands it over (a tuple: a million of them must be cheap)."""

    partition: int
    offset: int
    timestamp: int  # the record's timestamp (epoch ms): when the coordinator wrote it
    key: bytes | None
    value: bytes | None


class CommitRow(NamedTuple):
    group_id: str
    topic: str
    partition: int
    offset: int  # DELETED for a tombstone
    committed_at: int
    leader_epoch: int | None = None


@dataclass(frozen=True)
class GenerationMember:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True)
class GenerationRow:
    """A classic generation, a KIP-848 group epoch or a target assignment epoch, with who held what."""

    group_id: str
    kind: str  # "generation" | "group_epoch" | "assignment_epoch"
    epoch: int
    at: int
    protocol_type: str | None = None
    protocol: str | None = None  # classic: the assignor chosen; KIP-848: the server assignor
    leader: str | None = None
    members: tuple[GenerationMember, ...] = ()


@dataclass
class TailUpdate:
    """What one batch of records adds to the store, plus what went wrong with it."""

    commits: list[CommitRow] = field(default_factory=list)
    generations: list[GenerationRow] = field(default_factory=list)
    rebalances: list[Rebalance] = field(default_factory=list)  # in progress (ended_at None) or done
    positions: dict[int, int] = field(default_factory=dict)  # partition -> next offset to store
    records: int = 0
    skipped: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    # partition -> (records past the stored position it could not apply, the newest reason): stored beside
    # the position, so a record read again after a restart is not counted twice
    failures: dict[int, tuple[int, str]] = field(default_factory=dict)
    unknown_topic_ids: set[str] = field(default_factory=set)

    @property
    def empty(self) -> bool:
        return not (self.commits or self.generations or self.rebalances or self.positions)


@dataclass
class _Open:
    started_at: int
    before: GenerationRow  # the group as it stood before the rebalance


@dataclass
class _ConsumerGroup:
    """One KIP-848 group as its records describe it."""

    epoch: int | None = None
    assignment_epoch: int | None = None
    members: dict[str, ConsumerGroupMemberMetadata] = field(default_factory=dict)
    targets: dict[str, tuple[TopicIdPartitions, ...]] = field(default_factory=dict)
    current: dict[str, ConsumerGroupCurrentMemberAssignment] = field(default_factory=dict)
    settled: GenerationRow | None = None  # as of the last completed rebalance
    open: _Open | None = None


def _fail(out: TailUpdate, rec: TailRecord, past_stored: bool, why: str) -> None:
    """A record skipped: counted, named (the first MAX_ERRORS of a batch) and, when new, kept for the store."""
    message = f"__consumer_offsets-{rec.partition} offset {rec.offset}: {why}"
    out.failed += 1
    if len(out.errors) < MAX_ERRORS:
        out.errors.append(message)
    if past_stored:
        count, _ = out.failures.get(rec.partition, (0, ""))
        out.failures[rec.partition] = (count + 1, message)


class TailState:
    """Everything the tail knows; `apply` folds a batch in and says what is new."""

    def __init__(
        self, stored: dict[int, int] | None = None, since_ms: int = 0, owns: Callable[[str], bool] | None = None
    ):
        self.stored = dict(stored or {})  # partition -> next offset not yet stored, as loaded at start
        # A collector shard keeps only its own groups' records (monitor.shard); None keeps every group.
        self.owns = owns
        self._owned: dict[str, bool] = {}  # owns() per group id: asked once per record
        self.since_ms = since_ms  # first start: store records from this time on
        self.read: dict[int, int] = {}  # partition -> next offset to read (for "caught up")
        self.committed: dict[str, dict[TopicPartition, int]] = {}
        self.classic: dict[str, GenerationRow] = {}
        self.classic_open: dict[str, _Open] = {}
        self.consumer: dict[str, _ConsumerGroup] = {}
        self.log_groups = LogGroups()  # share and streams groups, which only their records describe
        self.topic_names: dict[str, str] = {}

    def is_new(self, rec: TailRecord) -> bool:
        stored = self.stored.get(rec.partition)
        return rec.offset >= stored if stored is not None else rec.timestamp >= self.since_ms

    def committed_for(self, groups: Iterable[str]) -> dict[str, dict[TopicPartition, int]]:
        """The committed offsets of `groups`, and of every stand-in (monitor.names) with offsets: the ids
        librdkafka cannot list whole (it cuts an id at its NUL), so no caller can ask for them."""
        out = {g: dict(self.committed.get(g, {})) for g in groups}
        for g, offsets in self.committed.items():
            if offsets and g not in out and is_stand_in(g):
                out[g] = dict(offsets)
        return out

    def apply(self, records: Iterable[TailRecord]) -> TailUpdate:
        """Fold a batch in. The usual offset commit (nearly every record) is folded inline: a busy
        cluster's 20,000 a second each cost a method call and two tuples more otherwise."""
        out = TailUpdate()
        stored_at, since, read, positions = self.stored, self.since_ms, self.read, out.positions
        committed, commits, owns = self.committed, out.commits, self.owns
        n = 0
        for rec in records:
            n += 1
            partition, offset, timestamp, key, value = rec
            stored = stored_at.get(partition)
            new = offset >= stored if stored is not None else timestamp >= since  # = self.is_new(rec)
            usual = decode_usual_commit(key, value)  # nearly every record: no object made for it
            if usual is None:
                self._apply_record(rec, offset >= (stored or 0), new, out)
            elif owns is None or self._owns(usual[0]):  # = self._commit, inline
                group, tp, committed_offset, epoch, at = usual
                offsets = committed.get(group)
                if offsets is None:
                    offsets = committed[group] = {}
                offsets[tp] = committed_offset
                if new:
                    row = (group, tp[0], tp[1], committed_offset, at, epoch if epoch >= 0 else None)
                    commits.append(_new_tuple(CommitRow, row))
            read[partition] = offset + 1
            if offset >= (stored or 0):  # past what the store holds: move it on
                positions[partition] = offset + 1
        out.records = n
        return out

    def _apply_record(self, rec: TailRecord, past_stored: bool, new: bool, out: TailUpdate) -> None:
        """Any record but the usual offset commit: decoded whole, then folded in."""
        try:
            decoded = decode(rec.key, rec.value)
        except DecodeError as e:
            _fail(out, rec, past_stored, str(e))
            return
        if self.owns is not None and self._ignored(decoded):
            return
        try:
            if isinstance(decoded, OffsetCommit):
                if decoded.tombstone:
                    self._uncommit(decoded, rec, new, out)
                else:
                    epoch = decoded.leader_epoch
                    self._commit(
                        decoded.group,
                        decoded.topic,
                        decoded.partition,
                        decoded.offset,
                        -1 if epoch is None else epoch,
                        decoded.commit_timestamp,
                        new,
                        out,
                    )
            elif isinstance(decoded, GroupMetadata):
                self._classic(decoded, rec, new, out)
            elif isinstance(decoded, Skipped):
                out.skipped += 1
            elif isinstance(decoded, LOG_GROUP_RECORDS):
                self.log_groups.apply(decoded)
            else:
                self._consumer_record(decoded, rec, new, out)
        except Exception as e:  # a record decoded but not foldable: skipped and named, never read again
            _fail(out, rec, past_stored, f"cannot apply {type(decoded).__name__}: {type(e).__name__}: {e}")

    def _ignored(self, record) -> bool:
        """Another shard's group (topic names from partition metadata are kept: every shard needs them)."""
        group = getattr(record, "group", None)
        return group is not None and not isinstance(record, ConsumerGroupPartitionMetadata) and not self._owns(group)

    def _owns(self, group: str) -> bool:
        owned = self._owned.get(group)
        if owned is None:
            if len(self._owned) >= 1 << 16:
                self._owned.clear()
            owned = self._owned[group] = self.owns(group)
        return owned

    def mark_end(self, partition: int, offset: int) -> None:
        """The consumer reached the end of a partition at `offset` (control records included)."""
        self.read[partition] = max(self.read.get(partition, 0), offset)

    # -- offset commits ----------------------------------------------------------

    def _commit(
        self, group: str, topic: str, partition: int, offset: int, epoch: int, at: int, new: bool, out: TailUpdate
    ) -> None:
        """An offset committed at `at` (its commit timestamp); a leader epoch below 0 is none."""
        self.committed.setdefault(group, {})[intern_tp(topic, partition)] = offset
        if new:
            out.commits.append(CommitRow(group, topic, partition, offset, at, epoch if epoch >= 0 else None))

    def _uncommit(self, c: OffsetCommit, rec: TailRecord, new: bool, out: TailUpdate) -> None:
        """A tombstone: the offset was deleted or expired (at the record's own time)."""
        offsets = self.committed.get(c.group)
        if offsets is not None:
            offsets.pop(intern_tp(c.topic, c.partition), None)
            if not offsets:
                del self.committed[c.group]
        if new:
            out.commits.append(CommitRow(c.group, c.topic, c.partition, DELETED, rec.timestamp))

    # -- classic groups ------------------------------------------------------------

    def _classic(self, g: GroupMetadata, rec: TailRecord, new: bool, out: TailUpdate) -> None:
        if g.tombstone:  # group deleted: a later group of that name starts afresh
            self.classic.pop(g.group, None)
            self.classic_open.pop(g.group, None)
            return
        at = g.current_state_timestamp if g.current_state_timestamp and g.current_state_timestamp > 0 else rec.timestamp
        members = tuple(
            GenerationMember(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host.lstrip("/"),
                m.consumer_assignment.partitions if m.consumer_assignment else (),
            )
            for m in g.members
        )
        row = GenerationRow(g.group, "generation", g.generation, at, g.protocol_type, g.protocol, g.leader, members)
        prev = self.classic.get(g.group)
        self.classic[g.group] = row
        if new:
            out.generations.append(row)
        if prev is None or g.generation <= prev.epoch:
            return  # first sight, or the same generation rewritten (a static member's new member id)
        opened = self.classic_open.pop(g.group, None)
        base = opened.before if opened else prev
        started = opened.started_at if opened else at
        # an Empty group names no protocol: the rebalance that emptied it ran the previous one
        protocol = "cooperative" if "cooperative" in (g.protocol or base.protocol or "") else "eager"
        if protocol == "cooperative" and compute_orphans(base, row):
            self.classic_open[g.group] = _Open(started, base)  # first round: revoked, not yet reassigned
            ended = None
        else:
            ended = at
        if new:
            out.rebalances.append(compute_tail_rebalance(base, row, started, ended, protocol))

    # -- KIP-848 groups --------------------------------------------------------------

    def _consumer_record(self, r, rec: TailRecord, new: bool, out: TailUpdate) -> None:
        if isinstance(r, ConsumerGroupPartitionMetadata):
            if not r.tombstone:
                self.topic_names.update((t.topic_id, t.topic_name) for t in r.topics)
            return
        if not hasattr(r, "group"):
            return
        cg = self.consumer.setdefault(r.group, _ConsumerGroup())
        if isinstance(r, ConsumerGroupMemberMetadata):
            if r.tombstone:
                cg.members.pop(r.member_id, None)
            else:
                cg.members[r.member_id] = r
        elif isinstance(r, ConsumerGroupTargetAssignmentMember):
            if r.tombstone:
                cg.targets.pop(r.member_id, None)
            else:
                cg.targets[r.member_id] = r.topic_partitions
        elif isinstance(r, ConsumerGroupCurrentMemberAssignment):
            if r.tombstone:
                cg.current.pop(r.member_id, None)
            else:
                cg.current[r.member_id] = r
        elif isinstance(r, ConsumerGroupMetadata):
            if r.tombstone:  # group deleted
                del self.consumer[r.group]
                return
            before, cg.epoch = cg.epoch, r.epoch
            row = self._consumer_row(r.group, cg, "group_epoch", r.epoch, rec.timestamp, out, current=True)
            if new:
                out.generations.append(row)
            if before is None or r.epoch <= before:
                cg.settled = cg.settled or row
                return
            if cg.open is None:
                cg.open = _Open(rec.timestamp, cg.settled or row)
                if new:
                    out.rebalances.append(
                        compute_tail_rebalance(cg.open.before, row, rec.timestamp, None, "consumer", before)
                    )
        elif isinstance(r, ConsumerGroupTargetAssignmentMetadata):
            if r.tombstone:
                return
            cg.assignment_epoch = r.assignment_epoch
            at = r.assignment_timestamp or rec.timestamp
            row = self._consumer_row(r.group, cg, "assignment_epoch", r.assignment_epoch, at, out, current=False)
            if new:
                out.generations.append(row)
        if not isinstance(r, (ConsumerGroupMemberMetadata, ConsumerGroupTargetAssignmentMember)):
            # not on a member's own records: a leaving member's tombstones precede its group epoch bump
            self._maybe_settled(r.group, cg, rec, new, out)

    def _maybe_settled(self, group: str, cg: _ConsumerGroup, rec: TailRecord, new: bool, out: TailUpdate) -> None:
        """Complete the open rebalance once every member holds the target of the latest epoch."""
        if cg.open is None or cg.epoch is None:
            return
        if cg.members and (cg.assignment_epoch is None or cg.assignment_epoch < cg.epoch):
            return  # the coordinator has not computed the new target yet (an empty group needs none)
        for mid in cg.members:
            cur = cg.current.get(mid)
            if (
                cur is None
                or cur.member_epoch != cg.assignment_epoch
                or cur.state != 0
                or any(t.partitions for t in cur.partitions_pending_revocation)
            ):
                return
        after = self._consumer_row(group, cg, "group_epoch", cg.epoch, rec.timestamp, out, current=True)
        if new:
            out.rebalances.append(
                compute_tail_rebalance(
                    cg.open.before, after, cg.open.started_at, rec.timestamp, "consumer", cg.open.before.epoch
                )
            )
        cg.open, cg.settled = None, after

    def _consumer_row(
        self, group: str, cg: _ConsumerGroup, kind: str, epoch: int, at: int, out: TailUpdate, current: bool
    ) -> GenerationRow:
        members = []
        for mid, m in sorted(cg.members.items()):
            if current:
                parts = cg.current[mid].assigned_partitions if mid in cg.current else ()
            else:
                parts = cg.targets.get(mid, ())
            named, unknown = resolve_topic_ids(parts, self.topic_names)
            out.unknown_topic_ids.update(unknown)
            members.append(
                GenerationMember(
                    mid, m.instance_id, m.client_id or "", (m.client_host or "").lstrip("/"), tuple(sorted(named))
                )
            )
        assignors = {m.server_assignor for m in cg.members.values() if m.server_assignor}
        return GenerationRow(
            group, kind, epoch, at, "consumer", ",".join(sorted(assignors)) or None, None, tuple(members)
        )


# ---- pure helpers ------------------------------------------------------------------


def compute_commit_counts(
    update: TailUpdate, since_ms: int, wants: Callable[[str, str], bool] | None = None
) -> Counter[tuple[str, str]]:
    """Offset commits per (group, topic) in `update`, as KMinion's offset_commits_total counts them.

    One per partition offset committed (a commit of six partitions counts six) at or after
    `since_ms`, of the (group, topic) pairs `wants` (None: all). A tombstone (an offset deleted
    or expired) is no commit. `update.commits` holds each record once, however often the
    tail replays the topic, so adding the counts of every update counts each commit once.
    """
    counts = Counter((c[0], c[1]) for c in update.commits if c[3] != DELETED and c[4] >= since_ms)
    if wants is not None:
        for key in [k for k in counts if not wants(*k)]:
            del counts[key]
    return counts


def compute_orphans(before: GenerationRow, after: GenerationRow) -> set[TopicPartition]:
    return orphans(owners(before.members), owners(after.members))


def compute_tail_rebalance(
    before: GenerationRow,
    after: GenerationRow,
    started_at: int,
    ended_at: int | None,
    protocol: str,
    generation_before: int | None = None,
) -> Rebalance:
    """One rebalance between two generations/epochs of a group, as the offsets topic shows it."""
    bk, ak = {member_key(m): m for m in before.members}, {member_key(m): m for m in after.members}
    joined, left = sorted(ak.keys() - bk.keys()), sorted(bk.keys() - ak.keys())
    a, b = owners(before.members), owners(after.members)
    moved = sum(1 for tp in a.keys() | b.keys() if a.get(tp) != b.get(tp)) if ended_at is not None else 0
    if joined:
        trigger = Trigger.MEMBER_JOINED
    elif left:
        trigger = Trigger.MEMBER_LEFT  # the records cannot tell a clean leave from a session timeout
    elif {tp.topic for tp in a} != {tp.topic for tp in b} and ended_at is not None:
        trigger = Trigger.SUBSCRIPTION_CHANGED
    else:
        trigger = Trigger.UNKNOWN

    return Rebalance(
        after.group_id,
        started_at,
        ended_at,
        protocol,
        trigger,
        len(bk),
        len(ak),
        joined=tuple(member_ref(ak[k]) for k in joined),
        left=tuple(member_ref(bk[k]) for k in left),
        partitions_moved=moved,
        generation_before=before.epoch if generation_before is None else generation_before,
        generation_after=after.epoch,
        source="offsets_topic",
    )
