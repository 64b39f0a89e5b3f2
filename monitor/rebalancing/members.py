"""Members and owners, for a sampled group and a generation read from the offsets topic alike."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from monitor.models import MemberRef, TopicPartition

Owners = dict[TopicPartition, str]  # partition -> member key


class AssignedMember(Protocol):
    """What a member is known by and what it holds (models.Member, history.GenerationMember)."""

    @property
    def member_id(self) -> str: ...
    @property
    def instance_id(self) -> str | None: ...
    @property
    def client_id(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def assignment(self) -> tuple[TopicPartition, ...]: ...


def member_key(m: AssignedMember) -> str:
    """Static members keep their instance id across restarts; dynamic ones only their id."""
    return m.instance_id or m.member_id


def member_ref(m: AssignedMember) -> MemberRef:
    return MemberRef(m.member_id, m.client_id, m.host, m.instance_id)


def owners(members: Iterable[AssignedMember]) -> Owners:
    """Partition -> owner key; the first listed owner wins if two claim one."""
    out: Owners = {}
    for m in members:
        for tp in m.assignment:
            out.setdefault(tp, member_key(m))
    return out


def orphans(before: Owners, after: Owners) -> set[TopicPartition]:
    """Partitions owned before, of topics still consumed after, that nobody owns after.

    Cooperative groups revoke first and assign in a second round: in between, these have no owner.
    """
    topics = {tp.topic for tp in after}
    return {tp for tp in before if tp.topic in topics and tp not in after}
