"""Pure diff of two cluster snapshots into events and rebalances.

Polling sees a group once per interval, so all here is inferred from consecutive
samples. No I/O, no clock: every timestamp comes from the snapshots. Heuristics:

- Identity: a member is keyed by its group.instance.id when it has one, else by
  its member id: a static member restarting within its session timeout gets a new
  member id but Kafka does not rebalance, so we emit no leave/join, no rebalance.
- Settled: Stable or Empty, every KIP-848 member holding its target assignment,
  and no partition of a still-consumed topic left unowned (the gap between the
  two rounds of a cooperative rebalance). Classic groups show no assignments
  while Preparing/CompletingRebalance, so ownership is compared between the
  last visible sample before and the settled one after; partitions_moved counts
  owner changes, to or from nobody included (new partitions count).
- Bounds: started_at is the last sample before the rebalance was seen (the
  group still settled), ended_at the first sample seeing it settled again. One
  that ran entirely between two settled samples (members or owners differ) gets
  prev.taken_at .. cur.taken_at. Durations are upper bounds (<= 2 intervals long).
- Trigger: the first rule that matches, in this order: new member keys ->
  MEMBER_JOINED; a departed member that looked dead before the rebalance (still
  listed in two Stable samples, not one of its partitions' commits moved while at
  least one of them had lag) -> SESSION_TIMEOUT; other departures -> MEMBER_LEFT;
  a consumed topic gained partitions -> PARTITIONS_ADDED; same members but a
  different set of assigned topics -> SUBSCRIPTION_CHANGED; else UNKNOWN.
- Group gone mid-rebalance (or no longer a consumer group): the rebalance is ended,
  not dropped, at the first sample without the group, with the last sample seen as its "after", so no row
  stays open forever; the group_disappeared event of that cycle says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from monitor.models import (
    ClusterSnapshot,
    Event,
    EventKind,
    GroupSnapshot,
    GroupState,
    GroupType,
    Member,
    PartitionOffsets,
    Rebalance,
    TopicPartition,
    Trigger,
)
from monitor.rebalancing.members import Owners, member_key, member_ref, orphans, owners

SETTLED_STATES = frozenset({GroupState.STABLE, GroupState.EMPTY})
# Classic DescribeGroups returns empty assignments until the group is Stable again.
HIDDEN_ASSIGNMENT_STATES = frozenset({GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE})

Moves = dict[TopicPartition, tuple[str | None, str | None]]
Parts = dict[TopicPartition, PartitionOffsets]


@dataclass(frozen=True)
class OpenRebalance:
    """A rebalance seen starting and not yet seen settled."""

    started_at: int
    before: GroupSnapshot  # the last sample before it was seen (settled when we had one)
    last: GroupSnapshot  # the latest sample, the "after" if the group vanishes
    shown: GroupSnapshot  # the latest sample whose assignment was visible
    suspects: frozenset[str] = frozenset()  # member keys that looked dead at the start
    counts_before: dict[str, int] = field(default_factory=dict)  # partitions per topic
    passing: dict = field(default_factory=dict)  # member key -> member, of every sample seen while it ran


@dataclass(frozen=True)
class RebalanceTracker:
    """What must survive between cycles; never mutated, each advance returns a new one."""

    open: dict[str, OpenRebalance] = field(default_factory=dict)
    stalled: dict[str, frozenset[str]] = field(default_factory=dict)  # group -> member keys


# ---- small facts about one group -------------------------------------------------


def compute_owners(g: GroupSnapshot) -> Owners:
    return owners(g.members)


def compute_moves(before: GroupSnapshot, after: GroupSnapshot) -> Moves:
    """Partitions whose owner key differs, including to or from nobody."""
    a, b = compute_owners(before), compute_owners(after)
    return {tp: (a.get(tp), b.get(tp)) for tp in sorted(a.keys() | b.keys()) if a.get(tp) != b.get(tp)}


def compute_group_topics(g: GroupSnapshot) -> set[str]:
    """Topics a group consumes: committed to, assigned, or targeted."""
    tps = set(g.committed)
    for m in g.members:
        tps.update(m.assignment)
        tps.update(m.target_assignment or ())
    return {tp.topic for tp in tps}


def compute_partition_counts(snapshot: ClusterSnapshot, topics: set[str]) -> dict[str, int]:
    n = snapshot.partitions_per_topic
    return {t: n[t] for t in topics}


def compute_partition_growth(before: dict[str, int], after: dict[str, int]) -> dict[str, tuple[int, int]]:
    """Topics whose partition count rose; a topic absent before was not fetched, not added."""
    both = sorted(before.keys() & after.keys())
    return {t: (before[t], after[t]) for t in both if 0 < before[t] < after[t]}


def compute_protocol(g: GroupSnapshot) -> str:
    """KIP-848, share and streams groups reconcile on the broker ("consumer", "share", "streams");
    classic ones are eager unless the assignor is cooperative."""
    if g.type in _BROKER_ASSIGNED:
        return str(g.type)
    return "cooperative" if "cooperative" in g.assignor.lower() else "eager"


_BROKER_ASSIGNED = frozenset({GroupType.CONSUMER, GroupType.SHARE, GroupType.STREAMS})


# ---- rules: is the group rebalancing? --------------------------------------------


def compute_visible(g: GroupSnapshot) -> bool:
    # 1. classic groups hide assignments mid-rebalance: an empty view is not "nobody owns it"
    return not (g.type not in _BROKER_ASSIGNED and g.state in HIDDEN_ASSIGNMENT_STATES)


def compute_reconciling(g: GroupSnapshot) -> bool:
    # 2. KIP-848: a member still moving toward its target means a rebalance whatever the state says
    return any(m.target_assignment is not None and set(m.target_assignment) != set(m.assignment) for m in g.members)


def compute_orphans(before: GroupSnapshot, g: GroupSnapshot) -> set[TopicPartition]:
    # 3. cooperative groups revoke first and assign in a second round: in between, partitions
    #    of topics still being consumed have no owner
    if not compute_visible(g):
        return set()
    return orphans(compute_owners(before), compute_owners(g))


def compute_unsettled(g: GroupSnapshot, before: GroupSnapshot) -> bool:
    # 4. positive evidence only, so an Unknown/Dead state alone never opens a rebalance
    return g.state.rebalancing or compute_reconciling(g) or bool(compute_orphans(before, g))


def compute_settled(g: GroupSnapshot, before: GroupSnapshot) -> bool:
    # 5. done when Stable/Empty, every member holds its target and no partition is in flight
    return g.state in SETTLED_STATES and not compute_reconciling(g) and not compute_orphans(before, g)


def compute_changed(before: GroupSnapshot, after: GroupSnapshot) -> bool:
    # 6. a different member set or owner map means a rebalance ran, even one too fast to see
    if {member_key(m) for m in before.members} != {member_key(m) for m in after.members}:
        return True
    return compute_visible(before) and compute_visible(after) and bool(compute_moves(before, after))


def compute_stalled(prev: GroupSnapshot, cur: GroupSnapshot, parts: Parts) -> frozenset[str]:
    # 7. a member still listed in Stable whose commits froze while it had lag is likely dead,
    #    waiting for its session to time out (a clean leave rebalances at once instead)
    if prev.state is not GroupState.STABLE or cur.state is not GroupState.STABLE:
        return frozenset()
    listed = {member_key(m) for m in prev.members}
    out = set()
    for m in cur.members:
        if member_key(m) not in listed or not m.assignment:
            continue
        frozen = all(cur.committed.get(tp) == prev.committed.get(tp) for tp in m.assignment)
        offsets = [(parts.get(tp), cur.committed.get(tp)) for tp in m.assignment]
        if frozen and any(p is not None and c is not None and p.log_end > c for p, c in offsets):
            out.add(member_key(m))
    return frozenset(out)


def compute_trigger(o: OpenRebalance, after: GroupSnapshot, joined: set, left: set, grown: bool) -> Trigger:
    """The first rule that matches wins; see the module docstring for the order and why."""
    if joined:
        return Trigger.MEMBER_JOINED
    if left & o.suspects:
        return Trigger.SESSION_TIMEOUT
    if left:
        return Trigger.MEMBER_LEFT
    if grown:
        return Trigger.PARTITIONS_ADDED
    before_topics = {tp.topic for tp in compute_owners(o.before)}
    visible = compute_visible(o.before) and compute_visible(after)
    if visible and before_topics != {tp.topic for tp in compute_owners(after)}:
        return Trigger.SUBSCRIPTION_CHANGED
    return Trigger.UNKNOWN


def compute_rebalance(
    gid: str, o: OpenRebalance, after: GroupSnapshot, cur: ClusterSnapshot, ended_at: int | None
) -> Rebalance:
    """The Rebalance row for an open rebalance as of `after` (in progress when ended_at is None)."""
    bk = {member_key(m): m for m in o.before.members}
    ak = {member_key(m): m for m in after.members}
    # a member that came and went while it ran (a storm merges rounds into one row) joined and left
    every = {**o.passing, **bk, **ak}
    joined, left = (ak.keys() | o.passing.keys()) - bk.keys(), (bk.keys() | o.passing.keys()) - ak.keys()
    grown = compute_partition_growth(o.counts_before, compute_partition_counts(cur, set(o.counts_before)))
    moved = len(compute_moves(o.before, after)) if compute_visible(after) and compute_visible(o.before) else 0
    return Rebalance(
        gid,
        o.started_at,
        ended_at,
        compute_protocol(after if after.members else o.before),
        compute_trigger(o, after, set(joined), set(left), bool(grown)),
        len(bk),
        len(ak),
        joined=tuple(member_ref(every[k]) for k in sorted(joined)),
        left=tuple(member_ref(every[k]) for k in sorted(left)),
        partitions_moved=moved,
    )


# ---- rebalance tracking across cycles --------------------------------------------


def advance_rebalances(
    tracker: RebalanceTracker, prev: ClusterSnapshot | None, cur: ClusterSnapshot
) -> tuple[RebalanceTracker, list[Rebalance], list[Rebalance]]:
    """One cycle of rebalance detection: (new tracker, started, completed).

    Every rebalance shows up once in `started` (ended_at None, trigger so far)
    and once in `completed`, possibly in the same cycle when it was fast.
    Groups that are not consumer groups (`is_consumer_group`) are never tracked.
    """
    prev_groups = prev.groups if prev else {}
    opened, stalled = {}, {}
    started: list[Rebalance] = []
    completed: list[Rebalance] = []
    for gid in sorted(tracker.open.keys() | cur.groups.keys()):
        g, o = cur.groups.get(gid), tracker.open.get(gid)
        if g is None or not g.is_consumer_group:  # gone (or no longer one): end it with the last sample seen
            if o is not None:
                completed.append(compute_rebalance(gid, o, o.last, cur, cur.taken_at))
            continue
        before = None if (b := prev_groups.get(gid)) is None or not b.is_consumer_group else b
        if o is None:
            o = compute_opening(gid, tracker, prev, before, cur, g)
            if o is not None:
                started.append(compute_rebalance(gid, o, g, cur, None))
        if o is not None:
            if compute_settled(g, o.before):
                completed.append(compute_rebalance(gid, o, g, cur, cur.taken_at))
            else:
                passing = o.passing | {k: m for m in g.members if (k := member_key(m)) not in o.passing}
                opened[gid] = replace(o, last=g, shown=g if compute_visible(g) else o.shown, passing=passing)
        if before is not None and (s := compute_stalled(before, g, cur.partitions)):
            stalled[gid] = s
    return RebalanceTracker(open=opened, stalled=stalled), started, completed


def compute_opening(
    gid: str,
    tracker: RebalanceTracker,
    prev: ClusterSnapshot | None,
    before: GroupSnapshot | None,
    cur: ClusterSnapshot,
    g: GroupSnapshot,
) -> OpenRebalance | None:
    """An OpenRebalance when this sample shows a rebalance began, else None."""
    if before is None:
        # a group seen for the first time has no baseline: only a visible rebalance counts
        if not compute_unsettled(g, g):
            return None
        counts = compute_partition_counts(cur, compute_group_topics(g))
        return OpenRebalance(cur.taken_at, g, g, g, counts_before=counts)
    # already rebalancing in prev (fresh tracker) counts too, so a restart loses nothing
    if before.state is g.state and before.members == g.members:  # most groups: no orphan, no move, no new member
        if not (g.state.rebalancing or compute_reconciling(g)):
            return None
    elif not (compute_unsettled(before, before) or compute_unsettled(g, before) or compute_changed(before, g)):
        return None
    counts = compute_partition_counts(prev, compute_group_topics(before))
    return OpenRebalance(prev.taken_at, before, before, before, tracker.stalled.get(gid, frozenset()), counts)


def compute_tracker(prev: ClusterSnapshot | None) -> RebalanceTracker:
    """The tracker a continuous run would hold after `prev`, short of what it alone can't show."""
    return advance_rebalances(RebalanceTracker(), None, prev)[0] if prev else RebalanceTracker()


# ---- events ----------------------------------------------------------------------


def compute_events(
    prev: ClusterSnapshot | None, cur: ClusterSnapshot, tracker: RebalanceTracker | None = None
) -> list[Event]:
    """Everything that changed between two samples, stamped cur.taken_at, ordered by group.

    Pass the tracker as it stood before this cycle (the one given to
    advance_rebalances) so rebalance events and assignment diffs span several
    samples; without it, one is rebuilt from `prev` alone.
    """
    tracker = compute_tracker(prev) if tracker is None else tracker
    return compute_changes(prev, cur, tracker)[0]


def compute_changes(
    prev: ClusterSnapshot | None, cur: ClusterSnapshot, tracker: RebalanceTracker
) -> tuple[list[Event], RebalanceTracker, list[Rebalance], list[Rebalance]]:
    """One cycle's (events, next tracker, rebalances started, rebalances completed), advancing once."""
    next_tracker, started, completed = advance_rebalances(tracker, prev, cur)
    return _events(prev, cur, tracker, started, completed), next_tracker, started, completed


def _events(prev, cur, tracker, started, completed) -> list[Event]:
    starts = {r.group_id: r for r in started}
    ends = {r.group_id: r for r in completed}
    prev_groups = prev.groups if prev else {}
    grown = _grown_topics(prev, cur)
    at = cur.taken_at
    events: list[Event] = []
    for gid in sorted(prev_groups.keys() | cur.groups.keys()):
        before, after = prev_groups.get(gid), cur.groups.get(gid)
        # most groups are exactly as they were: nothing can have happened to them
        if (
            before == after
            and gid not in starts
            and gid not in ends
            and gid not in tracker.open
            and not (grown and compute_group_topics(after) & grown.keys())
        ):
            continue
        if after is None:
            events += compute_rebalance_events(at, None, ends.get(gid))
            events.append(Event(at, gid, EventKind.GROUP_DISAPPEARED, compute_group_detail(before)))
            continue
        if before is None:
            if prev is not None and after.type in prev.unsampled:  # not new: the last cycle could not see it
                continue
            events.append(Event(at, gid, EventKind.GROUP_APPEARED, compute_group_detail(after)))
            events += compute_rebalance_events(at, starts.get(gid), ends.get(gid))
            continue
        if not (before.is_consumer_group and after.is_consumer_group):  # only its presence (and a cut-off rebalance)
            events += compute_rebalance_events(at, starts.get(gid), ends.get(gid))
            continue
        o = tracker.open.get(gid)
        ref = before if compute_visible(before) else (o.shown if o else None)
        events += compute_coordinator_events(at, before, after)
        events += compute_state_events(at, before, after)
        events += compute_rebalance_events(at, starts.get(gid), None)
        events += compute_member_events(at, before, after)
        events += compute_assignment_events(at, ref, after)
        events += compute_rebalance_events(at, None, ends.get(gid))
        events += compute_rewind_events(at, before, after)
        if grown:
            events += compute_partitions_added_events(at, before, after, grown)
    return events


def _grown_topics(prev: ClusterSnapshot | None, cur: ClusterSnapshot) -> dict[str, tuple[int, int]]:
    """Topics with more partitions now than in the previous sample: {topic: (count before, count now)}."""
    if prev is None:
        return {}
    return compute_partition_growth(prev.partitions_per_topic, cur.partitions_per_topic)


def compute_group_detail(g: GroupSnapshot) -> dict:
    return {"state": g.state.value, "members": len(g.members)}


def compute_member_detail(m: Member) -> dict:
    return {"member_id": m.member_id, "client_id": m.client_id, "host": m.host, "instance_id": m.instance_id}


def compute_coordinator_events(at: int, before: GroupSnapshot, after: GroupSnapshot) -> list[Event]:
    # a coordinator move alone is a broker event, not a rebalance; unknown (None) is not a move
    was, now = before.coordinator, after.coordinator
    if was is None or now is None or was == now:
        return []
    return [Event(at, after.group_id, EventKind.COORDINATOR_MOVED, {"from": was, "to": now})]


def compute_state_events(at: int, before: GroupSnapshot, after: GroupSnapshot) -> list[Event]:
    if before.state == after.state:
        return []
    detail = {"from": before.state.value, "to": after.state.value}
    return [Event(at, after.group_id, EventKind.STATE_CHANGED, detail)]


def compute_member_events(at: int, before: GroupSnapshot, after: GroupSnapshot) -> list[Event]:
    # matched by instance id when present, so a static member's restart is neither a leave nor a join
    bk = {member_key(m): m for m in before.members}
    ak = {member_key(m): m for m in after.members}
    left = [(EventKind.MEMBER_LEFT, bk[k]) for k in sorted(bk.keys() - ak.keys())]
    joined = [(EventKind.MEMBER_JOINED, ak[k]) for k in sorted(ak.keys() - bk.keys())]
    return [Event(at, after.group_id, kind, compute_member_detail(m)) for kind, m in left + joined]


def compute_assignment_events(at: int, ref: GroupSnapshot | None, after: GroupSnapshot) -> list[Event]:
    # diff against the last visible ownership, so a hidden mid-rebalance view is not "all revoked"
    if ref is None or not compute_visible(ref) or not compute_visible(after):
        return []
    moves = compute_moves(ref, after)
    if not moves:
        return []
    was = {member_key(m): m.member_id for m in ref.members}
    now = {member_key(m): m.member_id for m in after.members}
    pairs: dict[tuple[str | None, str | None], list[str]] = {}
    for tp, (src, dst) in moves.items():
        pairs.setdefault((was.get(src), now.get(dst)), []).append(f"{tp.topic}-{tp.partition}")
    order = sorted(pairs, key=lambda p: (p[0] or "", p[1] or ""))
    listed = [{"from": s, "to": d, "partitions": pairs[(s, d)]} for s, d in order]
    return [Event(at, after.group_id, EventKind.ASSIGNMENT_CHANGED, {"moved": len(moves), "moves": listed})]


def compute_rebalance_events(at: int, start: Rebalance | None, end: Rebalance | None) -> list[Event]:
    out = []
    if start is not None:
        detail = {"started_at": start.started_at, "protocol": start.protocol, "trigger": start.trigger.value}
        out.append(Event(at, start.group_id, EventKind.REBALANCE_STARTED, detail))
    if end is not None:
        detail = {
            "started_at": end.started_at,
            "duration_ms": end.duration_ms,
            "protocol": end.protocol,
            "trigger": end.trigger.value,
            "members_before": end.members_before,
            "members_after": end.members_after,
            "partitions_moved": end.partitions_moved,
        }
        out.append(Event(at, end.group_id, EventKind.REBALANCE_COMPLETED, detail))
    return out


def compute_rewind_events(at: int, before: GroupSnapshot, after: GroupSnapshot) -> list[Event]:
    # a committed offset going backwards means a reset or a replay: records get processed twice
    out = []
    for tp in sorted(after.committed):
        was, now = before.committed.get(tp), after.committed[tp]
        if was is not None and now is not None and now < was:
            detail = {"topic": tp.topic, "partition": tp.partition, "from": was, "to": now}
            out.append(Event(at, after.group_id, EventKind.OFFSET_REWIND, detail))
    return out


def compute_partitions_added_events(
    at: int, before: GroupSnapshot, after: GroupSnapshot, grown: dict[str, tuple[int, int]]
) -> list[Event]:
    # new partitions of a consumed topic start unowned and trigger a rebalance in every consuming group
    topics = compute_group_topics(before) | compute_group_topics(after)
    return [
        Event(at, after.group_id, EventKind.PARTITIONS_ADDED, {"topic": t, "from": a, "to": b})
        for t, (a, b) in grown.items()
        if t in topics
    ]
