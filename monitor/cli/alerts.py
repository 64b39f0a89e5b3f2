"""`alerts` (list, test, ack, silence) and `status`: health and alerting from the command line."""
from __future__ import annotations

import argparse
import dataclasses
import os

from monitor.cli.common import now_ms, open_store, pick_cluster
from monitor.config import parse_time
from monitor.models import ConfigError
from monitor.output import fmt_time, render_json, render_table


def cmd_alerts(args: argparse.Namespace) -> int:
    from monitor.config import load_settings
    from monitor.store.alerts import read_alerts

    if args.action == "test":
        return _alerts_test(args.channel)
    engine = open_store(load_settings())
    now = now_ms()
    if args.action in ("ack", "silence"):
        return _alerts_mute(engine, args, now)
    since = parse_time(args.since, now, "--since")
    rows = read_alerts(engine, args.cluster, resolved_since=since)
    if args.json:
        print(render_json([{**dataclasses.asdict(a)} for a in rows]))
        return 0
    print(render_table([{
        "ID": a.id, "STATE": a.state.upper() + (" (acked)" if a.acked_at else ""), "SEVERITY": a.severity,
        "RULE": a.rule, "CLUSTER": a.cluster, "GROUP": a.group_id or None, "TOPIC": a.topic or None,
        "SINCE (UTC)": fmt_time(a.fired_at or a.started_at), "RESOLVED (UTC)": fmt_time(a.resolved_at),
        "SUMMARY": a.summary,
    } for a in rows], "no firing, pending or recently resolved alerts"))
    return 0


def _alerts_mute(engine, args: argparse.Namespace, now: int) -> int:
    from monitor.config import parse_duration
    from monitor.store.alerts import write_ack, write_silence

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
        if not sep or field not in ("rule", "cluster", "group", "topic", "severity") and not field.startswith("label."):
            raise ConfigError(f"--match {item!r}: use FIELD=REGEX with FIELD rule, cluster, group, topic, "
                              f"severity or label.NAME")
        matchers[field] = pattern
    if not matchers:
        raise ConfigError("alerts silence needs at least one --match FIELD=REGEX")
    until = now + int(parse_duration(args.duration, "--for") * 1000)
    silence_id = write_silence(engine, matchers, until, now, who, args.comment or "")
    print(f"silence {silence_id} until {fmt_time(until)} UTC: {matchers}")
    return 0


def _alerts_test(channel: str | None) -> int:
    from monitor.alerts.engine import load_alerting
    from monitor.alerts.notify import send_message

    rules, _ = load_alerting(dict(os.environ))
    if not channel:
        raise ConfigError(f"alerts test needs --channel NAME (known: {', '.join(rules.channels) or 'none'})")
    if channel not in rules.channels:
        raise ConfigError(f"channel {channel!r} is not defined (known: {', '.join(rules.channels) or 'none'}; "
                          f"set LAGMON_CHANNELS=name=apprise-url)")
    ok = send_message(rules.channels[channel], "🧪 lagmon test message",
                      f"If you can read this, channel {channel} works. Sent {fmt_time(now_ms())} UTC.")
    print(f"channel {channel}: " + ("the message was accepted" if ok else "the message did NOT arrive "
                                    "(the service refused it or could not be reached)"))
    return 0 if ok else 1


def cmd_status(args: argparse.Namespace) -> int:
    from monitor.alerts.engine import load_alerting, read_group_health
    from monitor.config import load_settings

    engine = open_store(load_settings())
    cluster = pick_cluster(engine, args.cluster)
    rules, _ = load_alerting(dict(os.environ))
    at, health, lag_s = read_group_health(engine, cluster, args.group, rules)
    rows = [{
        "TOPIC": p.tp.topic, "PARTITION": p.tp.partition, "STATUS": p.status.name, "LAG": p.lag,
        "LAG-SECONDS": None if lag_s.get(p.tp) is None else str(lag_s[p.tp]),
        "WINDOW": f"{p.complete:.0%}", "WHY": p.reason,
    } for p in health.partitions]
    if args.json:
        print(render_json({"cluster": cluster, "group": args.group, "at": at, "status": health.status.name,
                           "worst": health.worst.name, "total_lag": health.total_lag, "complete": health.complete,
                           "partitions": [{k.lower().replace("-", "_"): v for k, v in r.items()} for r in rows]}))
        return 0
    print(f"group {args.group} on {cluster}: {health.status.name} (worst partition {health.worst.name}), "
          f"total lag {health.total_lag}, as of {fmt_time(at)} UTC")
    print(render_table(rows, "no partitions"))
    return 0
