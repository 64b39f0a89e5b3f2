"""What only share and streams groups have, as the JSON the store keeps (pure, both ways).

A streams group's topology goes in `group_states.topology`; a member's subscribed
topics, and a streams member's process, topology epoch and tasks, in
`group_members.detail`. Tasks are written as Kafka prints them ("0_1": sub-topology
0, partition 1). A classic or consumer group stores NULL in both.
"""

from __future__ import annotations

import json

from monitor.models import Member, StreamsMember, StreamsTasks, Subtopology, Task, TaskKind, Topology
from monitor.store.sql import dumps_json


def topology_json(topology: Topology | None) -> str | None:
    return None if topology is None else dumps_json(topology)


def read_topology(text: str | None) -> Topology | None:
    if not text:
        return None
    raw = json.loads(text)
    return Topology(
        raw["epoch"],
        tuple(
            Subtopology(**{k: v if k == "subtopology_id" else tuple(v) for k, v in s.items()})
            for s in raw["subtopologies"]
        ),
    )


def _tasks_json(tasks: StreamsTasks) -> dict:
    return {kind.value: [str(t) for t in tasks.of(kind)] for kind in TaskKind}


def _read_tasks(raw: dict) -> StreamsTasks:
    def task(text: str) -> Task:
        subtopology, _, partition = text.rpartition("_")
        return Task(subtopology, int(partition))

    return StreamsTasks(**{kind.value: tuple(task(t) for t in raw.get(kind, ())) for kind in TaskKind})


def member_detail_json(m: Member) -> str | None:
    """The member's subscriptions and streams facts; None when it has neither (classic and consumer groups)."""
    detail: dict = {}
    if m.subscribed:
        detail["subscribed"] = list(m.subscribed)
    if m.streams is not None:
        s = m.streams
        detail |= {"process_id": s.process_id, "topology_epoch": s.topology_epoch, "tasks": _tasks_json(s.tasks)}
        if s.target_tasks is not None:
            detail["target_tasks"] = _tasks_json(s.target_tasks)
        if s.user_endpoint:
            detail["user_endpoint"] = s.user_endpoint
    return dumps_json(detail) if detail else None


def read_member_detail(text: str | None) -> tuple[tuple[str, ...], StreamsMember | None]:
    """(subscribed topics, streams facts) from a stored detail."""
    if not text:
        return (), None
    raw = json.loads(text)
    streams = None
    if "process_id" in raw:
        streams = StreamsMember(
            process_id=raw["process_id"],
            topology_epoch=raw["topology_epoch"],
            tasks=_read_tasks(raw["tasks"]),
            target_tasks=_read_tasks(raw["target_tasks"]) if "target_tasks" in raw else None,
            user_endpoint=raw.get("user_endpoint"),
        )
    return tuple(raw.get("subscribed", ())), streams
