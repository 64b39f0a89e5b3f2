"""The Group page's part for a streams group (KIP-1071): the topology and who runs which task.

The coordinator assigns a Kafka Streams app's tasks, not partitions: task "0_1" is
sub-topology 0 on partition 1 of its source topics. A member (one Streams client)
runs active tasks, keeps standby copies of others' state, and warms up state it is
about to take over. The frames are pure; `section` draws them.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages import shared
from monitor.models import StreamsTasks, Task, Topology

NOT_READY = (
    "NotReady (KIP-1071): the coordinator cannot assign this group's tasks yet: no member has declared the "
    "topology, a source topic is missing, or its internal repartition or changelog topics do not exist (yet). "
    "Members get no tasks until then; `kafka-streams-groups.sh --describe --members` shows the status the "
    "coordinator reports to them."
)

TASK_KINDS = ("active", "standby", "warmup")
TASK_HEADERS = {"active": "active tasks", "standby": "standby tasks", "warmup": "warm-up tasks"}


def _tasks(tasks: tuple[Task, ...]) -> str:
    return ", ".join(str(t) for t in sorted(tasks, key=lambda t: (t.subtopology, t.partition)))


def _pending(now: StreamsTasks, target: StreamsTasks | None) -> str:
    """What the target assignment changes for this member ("+0_1 -1_0"), empty once it runs its target."""
    if target is None or target == now:
        return ""
    changes = []
    for kind in TASK_KINDS:
        have, want = set(getattr(now, kind)), set(getattr(target, kind))
        moves = [f"+{t}" for t in sorted(want - have)] + [f"-{t}" for t in sorted(have - want)]
        if moves:
            changes.append(f"{kind} " + " ".join(moves))
    return "; ".join(changes)


def topology_frame(topology: Topology | None) -> pd.DataFrame:
    """One row per sub-topology: the topics it reads and the internal topics it writes."""
    columns = ["sub-topology", "source topics", "repartition source topics", "repartition sink topics", "changelogs"]
    rows = [
        {
            "sub-topology": s.subtopology_id,
            "source topics": ", ".join(s.source_topics),
            "repartition source topics": ", ".join(s.repartition_source_topics),
            "repartition sink topics": ", ".join(s.repartition_sink_topics),
            "changelogs": ", ".join(s.changelog_topics),
        }
        for s in (topology.subtopologies if topology else ())
    ]
    return pd.DataFrame(rows, columns=columns)


MEMBER_COLUMNS = [
    "client id",
    "host",
    "process id",
    *TASK_HEADERS.values(),
    "pending (target assignment)",
    "topology epoch",
    "user endpoint",
    "member id",
    "since",
]


def members_frame(members) -> pd.DataFrame:
    """One row per member (MemberRow from read_members): its process and its tasks now, and what the target
    assignment still changes."""
    rows = []
    for m in members:
        s = m.streams
        tasks = s.tasks if s else StreamsTasks()
        rows.append(
            {
                "client id": m.client_id,
                "host": m.host,
                "process id": s.process_id if s else "",
                **{TASK_HEADERS[k]: _tasks(getattr(tasks, k)) for k in TASK_KINDS},
                "pending (target assignment)": _pending(tasks, s.target_tasks) if s else "",
                "topology epoch": s.topology_epoch if s else None,
                "user endpoint": (s.user_endpoint or "") if s else "",
                "member id": m.member_id,
                "since": m.since,
            }
        )
    df = pd.DataFrame(rows, columns=MEMBER_COLUMNS)
    df["topology epoch"] = df["topology epoch"].astype("Int64")
    return df


def task_owners_frame(members) -> pd.DataFrame:
    """One row per task some member runs: which client (process) runs it active, standby or warming up."""
    owners: dict[Task, dict[str, list[str]]] = {}
    for m in members:
        if m.streams is None:
            continue
        who = f"{m.client_id or m.member_id} ({m.streams.process_id})"
        for kind in TASK_KINDS:
            for t in getattr(m.streams.tasks, kind):
                owners.setdefault(t, {k: [] for k in TASK_KINDS})[kind].append(who)
    rows = [
        {"task": str(t), **{k: ", ".join(sorted(owners[t][k])) for k in TASK_KINDS}}
        for t in sorted(owners, key=lambda t: (t.subtopology, t.partition))
    ]
    return pd.DataFrame(rows, columns=["task", *TASK_KINDS]).rename(columns={"warmup": "warm-up"})


def section(header, members) -> None:
    """Whether the target assignment has caught up, the topology, tasks per member and owners per task."""
    topology = header.topology
    if header.epoch is not None and header.assignment_epoch is not None and header.assignment_epoch < header.epoch:
        st.caption("The target assignment is behind the group epoch: the coordinator is still assigning tasks.")

    st.subheader("Topology")
    st.caption(
        'Each sub-topology reads its source and repartition topics; its tasks are numbered "sub-topology_partition" '
        "(0_1: sub-topology 0 on partition 1). Changelogs back its state stores."
    )
    if topology is None:
        st.info("No topology stored for this group yet: its members have not declared one to the coordinator.")
    else:
        shared.table(topology_frame(topology), key="gp_topology")

    st.subheader("Tasks per member")
    st.caption(
        "Active tasks process records; standby tasks keep a copy of another member's state for fail-over; warm-up "
        "tasks build up state the member is about to take over. Pending: what the coordinator's target "
        "assignment still adds (+) or removes (-) for the member."
    )
    mdf = members_frame(members)
    if mdf.empty:
        st.info("No members now: nobody runs this group's tasks.")
        return
    shared.table(shared.time_columns(mdf, "since"), key="gp_tasks")
    st.subheader("Task owners")
    shared.table(task_owners_frame(members), key="gp_task_owners")
