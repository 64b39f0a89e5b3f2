"""Read commands over the store: groups, lag, rebalances, events, commits (kafka-consumer-groups' columns),
and the coordinated collectors."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from monitor.cli.common import lag_seconds_columns, open_store, pick_cluster, table_columns
from monitor.clock import wall_ms
from monitor.config import load_settings, parse_time
from monitor.models import GroupType, UnknownGroup
from monitor.output import compute_ranges, fmt_duration, fmt_time, render_json, render_table


def cmd_groups(args: argparse.Namespace) -> int:
    from monitor.store import read_groups  # lazy: SQLAlchemy (monitor/cli/__init__.py)

    engine = open_store(load_settings().store.database_url)
    rows = [
        {
            "CLUSTER": g.cluster,
            "GROUP": g.group_id,
            "STATE": g.state.value + ("*" if g.state_inferred else "") + ("?" if g.last_answered_at else ""),
            "TYPE": g.type.value,
            "MEMBERS": g.members,
            "COORDINATOR (ID)": g.coordinator,
            "ASSIGNMENT-STRATEGY": g.assignor or None,
            "PARTITIONS": g.partitions,
            "TOTAL-LAG": g.total_lag,
            "MAX-LAG": g.max_lag,
            "LAST-SAMPLE (UTC)": fmt_time(g.last_sample_at),
            "NOTE": g.note,
        }
        for g in read_groups(engine, args.cluster)
    ]
    print(
        render_json(rows)
        if args.json
        else render_table(rows, "no groups stored yet: is the collector running? (python -m monitor collect)")
    )
    if not args.json and any("*" in g["STATE"] for g in rows):
        print("* KIP-848 state inferred: librdkafka reports Assigning/Reconciling as Unknown")
    if not args.json and any(g["STATE"].endswith("?") for g in rows):
        print(f"? {UNANSWERED}: the row is its last answer, from LAST-SAMPLE")
    return 0


UNANSWERED = "Kafka did not answer for this group in the newest cycle (a broker restarting, a coordinator moving)"


def _say_unanswered(engine, cluster: str, group: str) -> None:
    """On stderr, so JSON output stays whole: the rows are the group's last answer, not the present."""
    from monitor.store import read_unanswered  # lazy: SQLAlchemy (monitor/cli/__init__.py)

    answered_at = read_unanswered(engine, cluster).get(group)
    if answered_at is not None:
        print(f"{UNANSWERED}: these are its last answer, from {fmt_time(answered_at)} UTC", file=sys.stderr)


def cmd_lag(args: argparse.Namespace) -> int:
    from monitor.store import read_group_lag  # lazy: SQLAlchemy (monitor/cli/__init__.py)
    from monitor.store.groups import read_group_header  # lazy: SQLAlchemy (monitor/cli/__init__.py)
    from monitor.store.lag_seconds import read_lag_seconds  # lazy: SQLAlchemy (monitor/cli/__init__.py)

    settings = load_settings()
    engine = open_store(settings.store.database_url)
    cluster = pick_cluster(engine, args.cluster, settings.kafka.cluster)
    header = read_group_header(engine, cluster, args.group)
    _say_unanswered(engine, cluster, args.group)
    if header is not None and header.type is GroupType.SHARE:
        return _share_lag(engine, cluster, args)
    lag_s = read_lag_seconds(engine, cluster, args.group)
    rows = [
        {
            "GROUP": args.group,
            "TOPIC": p.topic,
            "PARTITION": p.partition,
            "CURRENT-OFFSET": p.committed,
            "LOG-END-OFFSET": p.log_end,
            "LAG": p.lag,
            **lag_seconds_columns(lag_s.get((p.topic, p.partition))),
            "CONSUMER-ID": p.member_id,
            "HOST": p.host,
            "CLIENT-ID": p.client_id,
        }
        for p in read_group_lag(engine, cluster, args.group)
    ]
    print(
        render_json(rows)
        if args.json
        else render_table(
            [table_columns(r) for r in rows],
            f"group {args.group} has no partitions with offsets (no commits and no assignment)",
        )
    )
    return 0


def _share_lag(engine, cluster: str, args: argparse.Namespace) -> int:
    """A share group's partitions as ShareGroupCommand --describe --offsets shows them, plus what is in flight.

    LAG is Kafka's (KIP-1226): records from the start offset to the log end not yet acknowledged or archived.
    """
    from monitor.store import read_group_lag, read_share_partitions  # lazy: SQLAlchemy (monitor/cli/__init__.py)

    share = read_share_partitions(engine, cluster, args.group)
    rows = []
    for p in read_group_lag(engine, cluster, args.group):
        sp = share.get((p.topic, p.partition))
        rows.append(
            {
                "GROUP": args.group,
                "TOPIC": p.topic,
                "PARTITION": p.partition,
                "START-OFFSET": None if sp is None else sp.start_offset,
                "LOG-END-OFFSET": p.log_end,
                "LAG": p.lag,
                "ACKNOWLEDGED": None if sp is None else sp.acknowledged,
                "ARCHIVED": None if sp is None else sp.archived,
                "REDELIVERING": None if sp is None else sp.redelivering,
                "MAX-DELIVERIES": None if sp is None else sp.max_delivery_count,
            }
        )
    print(
        render_json(rows)
        if args.json
        else render_table(rows, f"share group {args.group} has no share-partition state yet (nothing delivered)")
    )
    if not args.json and rows:
        print("share group: LAG counts records after START-OFFSET not yet acknowledged or archived (KIP-1226)")
    return 0


def cmd_members(args: argparse.Namespace) -> int:
    """One group's members now, with what each owns: partitions, and a streams member's tasks."""
    from monitor.store.groups import read_group_header, read_members  # lazy: SQLAlchemy (monitor/cli/__init__.py)

    settings = load_settings()
    engine = open_store(settings.store.database_url)
    cluster = pick_cluster(engine, args.cluster, settings.kafka.cluster)
    if read_group_header(engine, cluster, args.group) is None:
        raise UnknownGroup(f"group {args.group!r} is not in the store for cluster {cluster!r}")
    rows = []
    for m in read_members(engine, cluster, args.group):
        row = {
            "GROUP": args.group,
            "MEMBER-ID": m.member_id,
            "CLIENT-ID": m.client_id,
            "HOST": m.host,
            "INSTANCE-ID": m.instance_id,
            "RACK": m.rack,
            "SINCE (UTC)": fmt_time(m.since),
            "ASSIGNMENT": fmt_assignment(m.assignment) or None,
        }
        if m.streams is not None:
            tasks = m.streams.tasks
            row |= {
                "PROCESS-ID": m.streams.process_id,
                "ACTIVE-TASKS": ",".join(map(str, tasks.active)) or None,
                "STANDBY-TASKS": ",".join(map(str, tasks.standby)) or None,
                "WARMUP-TASKS": ",".join(map(str, tasks.warmup)) or None,
            }
        rows.append(row)
    print(render_json(rows) if args.json else render_table(rows, f"group {args.group} has no members now"))
    return 0


def fmt_assignment(partitions) -> str:
    """Partitions as kafka-share-groups prints them: "orders:0,2" (topics joined by ";")."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return ";".join(f"{t}:{','.join(map(str, ps))}" for t, ps in by_topic.items())


def cmd_rebalances(args: argparse.Namespace) -> int:
    from monitor.store import read_rebalances  # lazy: SQLAlchemy (monitor/cli/__init__.py)

    engine = open_store(load_settings().store.database_url)
    now = wall_ms()
    since = parse_time(args.since, now, "--since") if args.since else None
    until = parse_time(args.until, now, "--until") if args.until else None
    rows = []
    for row in read_rebalances(engine, args.cluster, args.group, since, until):
        r = row.rebalance
        rows.append(
            {
                "CLUSTER": row.cluster,
                "GROUP": r.group_id,
                "STARTED (UTC)": fmt_time(r.started_at),
                "DURATION": (
                    "-"
                    if r.source == "offsets_topic" and r.protocol != "consumer"  # the tail saw only its end
                    else fmt_duration(r.duration_ms)
                )
                if r.ended_at
                else "in progress",
                "PROTOCOL": r.protocol,
                "TRIGGER": r.trigger.value,
                "MEMBERS": f"{r.members_before}->{r.members_after}",
                "JOINED": ",".join(m.client_id or m.member_id for m in r.joined) or None,
                "LEFT": ",".join(m.client_id or m.member_id for m in r.left) or None,
                "MOVED": r.partitions_moved,
                "GENERATION/EPOCH": (
                    f"{r.generation_before}->{r.generation_after}" if r.generation_after is not None else None
                ),
                "SOURCE": r.source,
            }
            if not args.json
            else {"cluster": row.cluster, **dataclasses.asdict(r), "duration_ms": r.duration_ms}
        )
    print(render_json(rows) if args.json else render_table(rows, "no rebalances recorded in that window"))
    return 0


def cmd_events(args: argparse.Namespace) -> int:
    from monitor.store import read_events  # lazy: SQLAlchemy (monitor/cli/__init__.py)

    engine = open_store(load_settings().store.database_url)
    since = parse_time(args.since, wall_ms(), "--since") if args.since else None
    rows = [
        {
            "AT (UTC)": fmt_time(e.at),
            "CLUSTER": e.cluster,
            "GROUP": e.group_id,
            "EVENT": e.kind.value,
            "DETAIL": json.dumps(e.detail, sort_keys=True),
        }
        if not args.json
        else {"at": e.at, "cluster": e.cluster, "group": e.group_id, "event": e.kind.value, "detail": e.detail}
        for e in read_events(engine, args.cluster, args.group, since)
    ]
    print(render_json(rows) if args.json else render_table(rows, "no events recorded in that window"))
    return 0


def cmd_commits(args: argparse.Namespace) -> int:
    from monitor.store.offsets_tail import read_commits  # lazy: SQLAlchemy (monitor/cli/__init__.py)

    settings = load_settings()
    engine = open_store(settings.store.database_url)
    cluster = pick_cluster(engine, args.cluster, settings.kafka.cluster)
    since = parse_time(args.since, wall_ms(), "--since") if args.since else None
    commits = read_commits(engine, cluster, args.group, args.topic, args.partition, since)
    rows = [
        {
            "COMMITTED (UTC)": f"{fmt_time(c.committed_at)}.{c.committed_at % 1000:03d}",
            "TOPIC": c.topic,
            "PARTITION": c.partition,
            "OFFSET": c.offset if c.offset is not None else "deleted",
            "LEADER-EPOCH": c.leader_epoch,
        }
        if not args.json
        else {
            "committed_at": c.committed_at,
            "topic": c.topic,
            "partition": c.partition,
            "offset": c.offset,
            "leader_epoch": c.leader_epoch,
        }
        for c in commits
    ]
    print(
        render_json(rows)
        if args.json
        else render_table(
            rows,
            f"no commits stored for {args.group}: the offsets-topic tail records them "
            f"(LAGMON_OFFSETS_TOPIC=auto|on, Read on __consumer_offsets)",
        )
    )
    return 0


def cmd_collectors(args: argparse.Namespace) -> int:
    from monitor.store.collectors import read_collectors  # lazy: SQLAlchemy (monitor/cli/__init__.py)

    settings = load_settings()
    engine = open_store(settings.store.database_url)
    cluster = pick_cluster(engine, args.cluster, settings.kafka.cluster)
    now = wall_ms()
    rows = [
        {
            "COLLECTOR": c.name,
            "PARTITIONS": compute_ranges(c.partitions) or "-",
            "GROUPS": c.groups,
            "HOLDING-SINCE (UTC)": fmt_time(min(c.partitions.values())) if c.partitions else "-",
            "TAIL-LAG (records)": "-" if c.tail_lag is None else c.tail_lag,
            "LAST-SEEN": f"{(now - c.seen_at) / 1000:.0f}s ago",
        }
        if not args.json
        else {
            "collector": c.name,
            "partitions": {str(p): at for p, at in sorted(c.partitions.items())},
            "groups": c.groups,
            "tail_lag": c.tail_lag,
            "started_at": c.started_at,
            "seen_at": c.seen_at,
        }
        for c in read_collectors(engine, cluster)
    ]
    empty = f"no coordinated collector of cluster {cluster!r} has reported (they run with --shard kafka)"
    print(render_json(rows) if args.json else render_table(rows, empty))
    return 0
