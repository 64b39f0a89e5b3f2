"""SharePartitions: `__share_group_state` records folded into each share-partition's state (pure).

The share coordinator keeps, per (group, topic id, partition), a start offset and the
state batches of the records after it that were delivered at least once. A
ShareSnapshot replaces that state; a ShareUpdate is merged into it the way the
coordinator merges it (ShareCoordinatorShard.merge in Kafka 4.3): a start offset or
leader epoch of -1 keeps the old one, the delivery-complete count is the update's,
and the update's batches overwrite the ranges they cover, with everything before the
start offset dropped. A tombstone deletes the share-partition (group or topic deleted).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from monitor.models import DeliveryState, SharePartition, TopicPartition, intern_tp
from monitor.offsets_topic.records import ShareSnapshot

UNKNOWN = -1  # Kafka's "not set" for offsets, epochs and the delivery-complete count


class Batch(NamedTuple):
    """Records first..last (inclusive) in one delivery state with one delivery count."""

    first: int
    last: int
    state: int
    count: int


class _State(NamedTuple):
    start_offset: int
    state_epoch: int
    leader_epoch: int
    delivery_complete: int
    batches: tuple[Batch, ...]
    written_at: int


def compute_overlay(old: Iterable[Batch], new: Iterable[Batch], start: int) -> tuple[Batch, ...]:
    """`old` with `new` written over the offsets it covers, nothing before `start`, sorted.

    What Kafka's PersisterStateBatchCombiner does, minus its joining of neighbours
    with equal state and count (which changes no count lagmon shows).
    """
    new = sorted(b for b in new if b.last >= start)
    out: list[Batch] = []
    for b in old:
        pieces = [b]
        for n in new:
            pieces = [p for piece in pieces for p in _cut(piece, n.first, n.last)]
        out += pieces
    out += new
    return tuple(sorted(_from(b, start) for b in out if b.last >= start))


def _cut(b: Batch, first: int, last: int) -> list[Batch]:
    """The parts of `b` outside first..last."""
    if b.last < first or b.first > last:
        return [b]
    parts = []
    if b.first < first:
        parts.append(b._replace(last=first - 1))
    if b.last > last:
        parts.append(b._replace(first=last + 1))
    return parts


def _from(b: Batch, start: int) -> Batch:
    return b if b.first >= start else b._replace(first=start)


def compute_share_partition(state: _State) -> SharePartition:
    """The counts lagmon shows, from one share-partition's merged state."""
    acknowledged = archived = redelivering = most = 0
    for b in state.batches:
        n = b.last - b.first + 1
        if b.state == DeliveryState.ACKNOWLEDGED:
            acknowledged += n
        elif b.state == DeliveryState.ARCHIVED:
            archived += n
        elif b.count > 0:  # available again after at least one delivery: released or lock timed out
            redelivering += n
        most = max(most, b.count)
    return SharePartition(
        start_offset=state.start_offset,
        delivery_complete=None if state.delivery_complete == UNKNOWN else state.delivery_complete,
        state_epoch=state.state_epoch,
        leader_epoch=state.leader_epoch,
        acknowledged=acknowledged,
        archived=archived,
        redelivering=redelivering,
        max_delivery_count=most,
        written_at=state.written_at,
    )


class SharePartitions:
    """Every share-partition's state, as of the records applied so far."""

    def __init__(self) -> None:
        self._groups: dict[str, dict[tuple[str, int], _State]] = {}  # group -> (topic id, partition) -> state
        self.versions: dict[str, int] = {}  # group -> records applied: what changed since a snapshot was made

    def apply(self, record, timestamp: int) -> None:
        """Fold one decoded ShareSnapshot or ShareUpdate."""
        self.versions[record.group] = self.versions.get(record.group, 0) + 1
        states = self._groups.setdefault(record.group, {})
        key = (record.topic_id, record.partition)
        if record.tombstone:
            states.pop(key, None)
            if not states:
                del self._groups[record.group]
            return
        batches = [
            Batch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in record.state_batches
        ]
        old = states.get(key)
        if isinstance(record, ShareSnapshot):  # the whole state
            start = record.start_offset
            states[key] = _State(
                start,
                record.state_epoch,
                record.leader_epoch,
                record.delivery_complete_count,
                compute_overlay((), batches, start),
                timestamp,
            )
        elif old is not None:  # an update without a snapshot before it has nothing to apply to
            start = old.start_offset if record.start_offset == UNKNOWN else record.start_offset
            states[key] = _State(
                start,
                old.state_epoch,
                old.leader_epoch if record.leader_epoch == UNKNOWN else record.leader_epoch,
                record.delivery_complete_count,
                compute_overlay(old.batches, batches, start),
                timestamp,
            )

    def of_group(self, group: str, topic_names: dict[str, str]) -> dict[TopicPartition, SharePartition]:
        """The group's share-partitions by topic name (ids of unknown topics are left out)."""
        out = {}
        for (topic_id, partition), state in self._groups.get(group, {}).items():
            name = topic_names.get(topic_id)
            if name is not None:
                out[intern_tp(name, partition)] = compute_share_partition(state)
        return out
