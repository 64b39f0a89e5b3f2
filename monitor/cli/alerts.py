"""`alerts` (list, test, ack, silence) and `status`: health and alerting from the command line."""

from __future__ import annotations

import argparse
import dataclasses
import os

from monitor.cli.common import lag_seconds_columns, open_store, pick_cluster, table_columns
from monitor.clock import wall_ms
from monitor.config import AlertSettings, load_settings, parse_time, silence_end
from monitor.models import ConfigError, TopicPartition
from monitor.output import fmt_time, render_json, render_table


def cmd_alerts(args: argparse.Namespace) -> int:
    from monitor.store.alerts import read_alerts  # lazy: SQLAlchemy (monitor/cli/__init__.py)

    if args.action == "test":
        return _alerts_test(args.channel)
    engine = open_store(load_settings().store.database_url)
    now = wall_ms()
    if args.action in ("ack", "silence"):
        return _alerts_mute(engine, args, now)
    since = parse_time(args.since, now, "--since")
    rows = read_alerts(engine, args.cluster, resolved_since=since)
    if args.json:
        print(render_json([{**dataclasses.asdict(a)} for a in rows]))
        return 0
    print(
        render_table(
            [
                {
                    "ID": a.id,
                    "STATE": a.state.upper() + (" (acked)" if a.acked_at else ""),
                    "SEVERITY": a.severity,
                    "RULE": a.rule,
                    "CLUSTER": a.cluster,
                    "GROUP": a.group_id or None,
                    "TOPIC": a.topic or None,
                    "SINCE (UTC)": fmt_time(a.fired_at or a.started_at),
                    "RESOLVED (UTC)": fmt_time(a.resolved_at),
                    "SUMMARY": a.summary,
                }
                for a in rows
            ],
            "no firing, pending or recently resolved alerts",
        )
    )
    return 0


def _alerts_mute(engine, args: argparse.Namespace, now: int) -> int:
    from monitor.store.alerts import write_ack, write_silence  # lazy: SQLAlchemy (monitor/cli/__init__.py)

    who = args.by or os.environ.get("USER", "cli")
    if args.action == "ack":
        if not args.id:
            raise ConfigError("alerts ack needs the alert id (see `python -m monitor alerts`)")
        write_ack(engine, args.id, who, now)
        print(f"alert {args.id} acknowledged by {who}: no more repeats; its resolution will still be sent")
        return 0
    matchers = {}
    for item in args.match or []:
        field, sep, pattern = item.partition("=")
        if not sep or (
            field not in ("rule", "cluster", "group", "topic", "severity") and not field.startswith("label.")
        ):
            raise ConfigError(
                f"--match {item!r}: use FIELD=REGEX with FIELD rule, cluster, group, topic, severity or label.NAME"
            )
        matchers[field] = pattern
    if not matchers:
        raise ConfigError("alerts silence needs at least one --match FIELD=REGEX")
    until = silence_end(args.duration, now, AlertSettings.one_from_env("silence_max_s"), "--for")
    silence_id = write_silence(engine, matchers, until, now, who, args.comment or "")
    print(f"silence {silence_id} until {fmt_time(until)} UTC: {matchers}")
    return 0


def _alerts_test(channel: str | None) -> int:
    from monitor.alerts.engine import load_alerting  # lazy: SQLAlchemy (monitor/cli/__init__.py)
    from monitor.alerts.notify import send_message  # lazy: SQLAlchemy and Apprise (monitor/cli/__init__.py)

    rules, _ = load_alerting(AlertSettings.from_env())
    if not channel:
        raise ConfigError(f"alerts test needs --channel NAME (known: {', '.join(rules.channels) or 'none'})")
    if channel not in rules.channels:
        raise ConfigError(
            f"channel {channel!r} is not defined (known: {', '.join(rules.channels) or 'none'}; "
            f"set LAGMON_CHANNELS=name=apprise-url)"
        )
    ok = send_message(
        rules.channels[channel],
        "🧪 lagmon test message",
        f"If you can read this, channel {channel} works. Sent {fmt_time(wall_ms())} UTC.",
    )
    print(
        f"channel {channel}: "
        + (
            "the message was accepted"
            if ok
            else "the message did NOT arrive (the service refused it or could not be reached)"
        )
    )
    return 0 if ok else 1


def cmd_status(args: argparse.Namespace) -> int:
    """The collector's own verdicts (status, since when, why) beside the newest lag and lag in seconds."""
    from monitor.health.rules import compute_group_status  # lazy: SQLAlchemy (monitor/cli/__init__.py)
    from monitor.store import read_group_lag  # lazy: SQLAlchemy (monitor/cli/__init__.py)
    from monitor.store.health import (  # lazy: SQLAlchemy (monitor/cli/__init__.py)
        read_partition_verdicts,
        read_sample_time,
    )
    from monitor.store.lag_seconds import read_lag_seconds  # lazy: SQLAlchemy (monitor/cli/__init__.py)

    settings = load_settings()
    engine = open_store(settings.store.database_url)
    cluster = pick_cluster(engine, args.cluster, settings.kafka.cluster)
    lags = read_group_lag(engine, cluster, args.group)
    at = read_sample_time(engine, cluster, args.group)
    verdicts = read_partition_verdicts(engine, cluster, args.group)
    lag_s = read_lag_seconds(engine, cluster, args.group)
    rows = []
    for p in lags:
        verdict = verdicts.get(TopicPartition(p.topic, p.partition))
        rows.append(
            {
                "TOPIC": p.topic,
                "PARTITION": p.partition,
                "STATUS": verdict.status.name if verdict else None,
                "LAG": p.lag,
                **lag_seconds_columns(lag_s.get((p.topic, p.partition))),
                "SINCE (UTC)": fmt_time(verdict.since) if verdict else None,
                "WHY": (verdict.reason or "" if verdict else "not judged by the collector yet"),
            }
        )
    status, worst = compute_group_status(v.status for v in verdicts.values())
    total = sum(p.lag or 0 for p in lags)
    if args.json:
        print(
            render_json(
                {
                    "cluster": cluster,
                    "group": args.group,
                    "at": at,
                    "status": status.name,
                    "worst": worst.name,
                    "total_lag": total,
                    "partitions": [
                        {k.lower().replace("-", "_").replace(" (utc)", ""): v for k, v in r.items()} for r in rows
                    ],
                }
            )
        )
        return 0
    print(
        f"group {args.group} on {cluster}: {status.name} (worst partition {worst.name}), "
        f"total lag {total}, as of {fmt_time(at) if at else '-'} UTC"
    )
    print(render_table([table_columns(r) for r in rows], "no partitions"))
    return 0
