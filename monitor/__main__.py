"""lagmon's command line: `python -m monitor COMMAND ...` (a thin layer over the library)."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

from monitor.config import parse_time
from monitor.models import ConfigError, LagmonError
from monitor.output import fmt_duration, fmt_time, render_json, render_table


def cmd_devcluster(args: argparse.Namespace) -> int:
    from monitor import devcluster

    if args.action == "start":
        cluster = devcluster.start(args.dir, nodes=args.nodes)
        print(f"Kafka ready ({len(cluster.nodes)} node{'s' * (len(cluster.nodes) > 1)}): bootstrap {cluster.bootstrap}")
        print(f"cluster folder: {cluster.dir}")
    elif args.action == "stop":
        cluster = devcluster.stop(args.dir)
        print(f"stopped {len(cluster.nodes)} node(s) in {cluster.dir}")
    elif args.action == "status":
        status = devcluster.load(args.dir).status()
        if args.json:
            print(json.dumps(status))
        else:
            print(f"bootstrap {status['bootstrap']}  ({status['dir']})")
            for n in status["nodes"]:
                print(f"  node {n['id']}  port {n['port']}  {'running' if n['running'] else 'stopped'}")
        return 0 if any(n["running"] for n in status["nodes"]) else 3
    elif args.action == "stop-node":
        devcluster.stop_node(args.dir, args.node, kill=args.kill)
        print(f"node {args.node} stopped")
    elif args.action == "start-node":
        devcluster.start_node(args.dir, args.node)
        print(f"node {args.node} running")
    return 0


def cmd_sim(args: argparse.Namespace) -> int:
    from monitor import sim

    return sim.main(args)


def cmd_demo(args: argparse.Namespace) -> int:
    from monitor import demo

    return demo.run(args.dir)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _safe_url(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def _open_store(settings):
    """The database for reading, migrated to head; a clear error if there is none yet."""
    from monitor.store import make_engine, upgrade

    url = settings.database_url
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
        raise ConfigError(f"no database at {url.removeprefix('sqlite:///')}: "
                          f"run `python -m monitor collect` first (or set LAGMON_DATABASE_URL)")
    engine = make_engine(url)
    upgrade(engine)
    return engine


def _pick_cluster(engine, requested: str | None) -> str:
    """--cluster, else LAGMON_CLUSTER_NAME, else the only cluster in the database."""
    from monitor.store import read_clusters

    known = [c.cluster for c in read_clusters(engine)]
    wanted = requested or os.environ.get("LAGMON_CLUSTER_NAME")
    if wanted:
        if wanted not in known:
            raise ConfigError(f"cluster {wanted!r} is not in the database (known: {', '.join(known) or 'none'})")
        return wanted
    if len(known) == 1:
        return known[0]
    raise ConfigError(f"the database holds {len(known)} clusters: pick one with --cluster "
                      f"({', '.join(known) or 'none yet: run collect first'})")


def _bootstrap_for(settings) -> dict[str, str]:
    """The client config; without a bootstrap setting, the local dev cluster if one runs."""
    from monitor import devcluster

    conf = settings.librdkafka_config()
    if "bootstrap.servers" not in conf:
        try:
            cluster = devcluster.load(devcluster.DEFAULT_DIR)
        except LagmonError:
            cluster = None
        if cluster is None or not any(devcluster.is_running(n.pid) for n in cluster.nodes):
            raise ConfigError("no Kafka to watch: set LAGMON_BOOTSTRAP_SERVERS (or bootstrap.servers in "
                              "LAGMON_KAFKA_CONFIG), or start the local one: python -m monitor devcluster start")
        conf["bootstrap.servers"] = cluster.bootstrap
    return conf


def cmd_collect(args: argparse.Namespace) -> int:
    from monitor.collector import Collector, describe_cycle
    from monitor.config import load_settings, parse_duration
    from monitor.kafka import KafkaSampler
    from monitor.store import Store, make_engine, upgrade

    settings = load_settings()
    interval = parse_duration(args.interval, "--interval") if args.interval else settings.poll_interval_s
    conf = _bootstrap_for(settings)
    engine = make_engine(settings.database_url)
    upgrade(engine)
    from monitor.tail import build_offsets_tail

    store = Store(engine)
    observers, sender = _alerting(engine, settings.cluster_name, conf)
    tail = None if args.once else build_offsets_tail(
        conf, store, settings.cluster_name, mode=settings.offsets_topic, span_s=settings.offsets_topic_span_s,
        report=lambda line: print(line, flush=True), on_commit=observers[0].record_commit)
    sampler = KafkaSampler(conf, settings.cluster_name, settings.wants_group, timeout_s=min(10.0, max(interval, 2.0)),
                           offsets_tail=tail)
    if args.metrics_port:
        observers.append(_serve_metrics(args.metrics_port, args.metrics_address, settings.cluster_name, observers[0]))
    collector = Collector(sampler, store, settings.cluster_name, tail=tail, observers=observers)
    groups = "all groups"
    if settings.group_allow or settings.group_deny:
        groups = f"groups matching {getattr(settings.group_allow, 'pattern', '.*')!r}"
        if settings.group_deny:
            groups += f" except {settings.group_deny.pattern!r}"
    print(f"lagmon collector: cluster {settings.cluster_name!r} at {conf['bootstrap.servers']}, {groups}, "
          f"every {interval:g}s, into {_safe_url(settings.database_url)}; "
          f"offsets-topic tail {'on' if tail else 'off'}", flush=True)
    if args.once:
        result = collector.poll_once()
        print(describe_cycle(result))
        sender.drain_once()  # what this cycle queued goes out now (failures wait for the next start)
        return 0 if result.ok else 1
    sender.start()
    try:
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            collector.run(interval, stop, report=lambda line: print(line, flush=True))
        except KeyboardInterrupt:
            stop.set()
    finally:
        sender.stop()
    print("collector stopped")
    return 0


def _serve_metrics(port: str, address: str, cluster: str, alert_engine):
    """Prometheus /metrics from each cycle's snapshot and the alert engine's lag seconds and health."""
    from monitor.exporter import MetricsExporter

    if not port.isdigit():
        raise ConfigError(f"--metrics-port / LAGMON_METRICS_PORT: {port!r} is not a port number")
    exporter = MetricsExporter(cluster, health=alert_engine)
    try:
        exporter.serve(int(port), address)
    except OSError as e:
        raise ConfigError(f"cannot serve metrics on {address}:{port}: {e.strerror}")
    print(f"metrics: http://{address}:{port}/metrics", flush=True)
    return exporter


def _alerting(engine, cluster: str, conf: dict[str, str]):
    """The alert engine (a collector observer) and its outbox sender; a broken rules file stops the start."""
    from monitor.alerts.engine import AlertEngine, load_alerting
    from monitor.alerts.notify import OutboxSender

    rules, dashboard_url = load_alerting(dict(os.environ))
    exact_top = os.environ.get("LAGMON_LAG_EXACT_TOP", "0").strip()
    if not exact_top.isdigit():
        raise ConfigError(f"LAGMON_LAG_EXACT_TOP: {exact_top!r} is not a whole number (0 = off, e.g. 20)")
    reader = None
    if int(exact_top):
        from monitor.kafka import RecordTimestampReader

        reader = RecordTimestampReader(conf)
    report = lambda line: print(line, flush=True)  # noqa: E731
    sender = OutboxSender(engine, rules.channels, report=report)
    alert_engine = AlertEngine(engine, cluster, rules, dashboard_url=dashboard_url, sender=sender, report=report,
                               exact_reader=reader, exact_top=int(exact_top))
    channels = ", ".join(rules.channels) or "no channels (set LAGMON_CHANNELS)"
    print(f"alerts: {len(rules.rules)} rules from {rules.source}; sending to {channels}", flush=True)
    return [alert_engine], sender


def cmd_db(args: argparse.Namespace) -> int:
    from monitor.config import load_settings
    from monitor.store import upgrade

    url = load_settings().database_url
    upgrade(url)
    print(f"database {_safe_url(url)} is at the latest schema")
    return 0


def cmd_healthcheck(args: argparse.Namespace) -> int:
    """For container health checks: 0 when this cluster's newest cycle succeeded recently."""
    import time

    from monitor.config import load_settings
    from monitor.store import read_clusters

    settings = load_settings()
    max_age_s = max(60.0, 3 * settings.poll_interval_s)
    rows = {r.cluster: r for r in read_clusters(_open_store(settings))}
    row = rows.get(settings.cluster_name)
    if row is None:
        print(f"unhealthy: no sample of cluster {settings.cluster_name!r} yet")
        return 1
    age_s = time.time() - row.last_sample_at / 1000
    if not row.last_ok:
        print(f"unhealthy: the newest cycle failed: {row.last_errors[0] if row.last_errors else 'unknown error'}")
        return 1
    if age_s > max_age_s:
        print(f"unhealthy: the newest sample is {age_s:.0f}s old (more than {max_age_s:.0f}s)")
        return 1
    print(f"ok: newest sample {age_s:.0f}s ago")
    return 0


def cmd_groups(args: argparse.Namespace) -> int:
    from monitor.config import load_settings
    from monitor.store import read_groups

    engine = _open_store(load_settings())
    rows = [{
        "CLUSTER": g.cluster, "GROUP": g.group_id,
        "STATE": g.state.value + ("*" if g.state_inferred else ""), "TYPE": g.type.value,
        "MEMBERS": g.members, "COORDINATOR (ID)": g.coordinator, "ASSIGNMENT-STRATEGY": g.assignor or None,
        "PARTITIONS": g.partitions, "TOTAL-LAG": g.total_lag, "MAX-LAG": g.max_lag,
        "LAST-SAMPLE (UTC)": fmt_time(g.last_sample_at), "NOTE": g.note,
    } for g in read_groups(engine, args.cluster)]
    print(render_json(rows) if args.json else render_table(
        rows, "no groups stored yet: is the collector running? (python -m monitor collect)"))
    if not args.json and any(g["STATE"].endswith("*") for g in rows):
        print("* KIP-848 state inferred: librdkafka reports Assigning/Reconciling as Unknown")
    return 0


def cmd_lag(args: argparse.Namespace) -> int:
    from monitor.config import load_settings
    from monitor.store import read_group_lag

    engine = _open_store(load_settings())
    cluster = _pick_cluster(engine, args.cluster)
    rows = [{
        "GROUP": args.group, "TOPIC": p.topic, "PARTITION": p.partition, "CURRENT-OFFSET": p.committed,
        "LOG-END-OFFSET": p.log_end, "LAG": p.lag, "CONSUMER-ID": p.member_id, "HOST": p.host,
        "CLIENT-ID": p.client_id,
    } for p in read_group_lag(engine, cluster, args.group)]
    print(render_json(rows) if args.json else render_table(
        rows, f"group {args.group} has no partitions with offsets (no commits and no assignment)"))
    return 0


def cmd_rebalances(args: argparse.Namespace) -> int:
    from monitor.config import load_settings
    from monitor.store import read_rebalances

    engine = _open_store(load_settings())
    now = _now_ms()
    since = parse_time(args.since, now, "--since") if args.since else None
    until = parse_time(args.until, now, "--until") if args.until else None
    rows = []
    for row in read_rebalances(engine, args.cluster, args.group, since, until):
        r = row.rebalance
        rows.append({
            "CLUSTER": row.cluster, "GROUP": r.group_id, "STARTED (UTC)": fmt_time(r.started_at),
            "DURATION": ("-" if r.source == "offsets_topic" and r.protocol != "consumer"  # the tail saw only its end
                         else fmt_duration(r.duration_ms)) if r.ended_at else "in progress",
            "PROTOCOL": r.protocol, "TRIGGER": r.trigger.value, "MEMBERS": f"{r.members_before}->{r.members_after}",
            "JOINED": ",".join(m.client_id or m.member_id for m in r.joined) or None,
            "LEFT": ",".join(m.client_id or m.member_id for m in r.left) or None,
            "MOVED": r.partitions_moved,
            "GENERATION/EPOCH": (f"{r.generation_before}->{r.generation_after}"
                           if r.generation_after is not None else None),
            "SOURCE": r.source,
        } if not args.json else {"cluster": row.cluster, **dataclasses.asdict(r), "duration_ms": r.duration_ms})
    print(render_json(rows) if args.json else render_table(rows, "no rebalances recorded in that window"))
    return 0


def cmd_events(args: argparse.Namespace) -> int:
    from monitor.config import load_settings
    from monitor.store import read_events

    engine = _open_store(load_settings())
    since = parse_time(args.since, _now_ms(), "--since") if args.since else None
    rows = [{
        "AT (UTC)": fmt_time(e.at), "CLUSTER": e.cluster, "GROUP": e.group_id, "EVENT": e.kind.value,
        "DETAIL": json.dumps(e.detail, sort_keys=True),
    } if not args.json else {"at": e.at, "cluster": e.cluster, "group": e.group_id, "event": e.kind.value,
                             "detail": e.detail}
        for e in read_events(engine, args.cluster, args.group, since)]
    print(render_json(rows) if args.json else render_table(rows, "no events recorded in that window"))
    return 0


def cmd_alerts(args: argparse.Namespace) -> int:
    from monitor.config import load_settings
    from monitor.store.alerts import read_alerts

    if args.action == "test":
        return _alerts_test(args.channel)
    engine = _open_store(load_settings())
    now = _now_ms()
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
                      f"If you can read this, channel {channel} works. Sent {fmt_time(_now_ms())} UTC.")
    print(f"channel {channel}: " + ("the message was accepted" if ok else "the message did NOT arrive "
                                    "(the service refused it or could not be reached)"))
    return 0 if ok else 1


def cmd_status(args: argparse.Namespace) -> int:
    from monitor.alerts.engine import load_alerting, read_group_health
    from monitor.config import load_settings

    engine = _open_store(load_settings())
    cluster = _pick_cluster(engine, args.cluster)
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


def cmd_commits(args: argparse.Namespace) -> int:
    from monitor.config import load_settings
    from monitor.store.offsets_tail import read_commits

    engine = _open_store(load_settings())
    cluster = _pick_cluster(engine, args.cluster)
    since = parse_time(args.since, _now_ms(), "--since") if args.since else None
    commits = read_commits(engine, cluster, args.group, args.topic, args.partition, since)
    rows = [{
        "COMMITTED (UTC)": f"{fmt_time(c.committed_at)}.{c.committed_at % 1000:03d}", "TOPIC": c.topic, "PARTITION": c.partition,
        "OFFSET": c.offset if c.offset is not None else "deleted", "LEADER-EPOCH": c.leader_epoch,
    } if not args.json else {"committed_at": c.committed_at, "topic": c.topic, "partition": c.partition,
                             "offset": c.offset, "leader_epoch": c.leader_epoch} for c in commits]
    print(render_json(rows) if args.json else render_table(
        rows, f"no commits stored for {args.group}: the offsets-topic tail records them "
              f"(LAGMON_OFFSETS_TOPIC=auto|on, Read on __consumer_offsets)"))
    return 0


def cmd_analyze(args: argparse.Namespace) -> int:
    from spark.main import run  # lazily: pyspark only when analysing

    return run(args)


def _eta(seconds: float | None, catching_up: bool | None) -> str | None:
    if catching_up is None:
        return None
    return fmt_duration(int(seconds * 1000)) if catching_up and seconds is not None else "not catching up"


def _num(x: float | None, digits: int = 1) -> str | None:
    return None if x is None else f"{x:.{digits}f}"


def cmd_trends(args: argparse.Namespace) -> int:
    from monitor.config import load_settings
    from monitor.store import read_last_analysis, read_trends

    engine = _open_store(load_settings())
    since = parse_time(args.since, _now_ms(), "--since") if args.since else None
    topic = None if args.topics else ""
    rows = read_trends(engine, args.cluster, args.group, args.window, topic, since)
    if not args.since and not args.json:  # the newest bucket of each series is what people ask for
        newest = {}
        for r in rows:
            newest[(r.cluster, r.group_id, r.topic)] = r
        rows = list(newest.values())
    if args.json:
        print(render_json([dataclasses.asdict(r) for r in rows]))
        return 0
    print(render_table([{
        "CLUSTER": r.cluster, "GROUP": r.group_id, "TOPIC": r.topic or "(all)", "WINDOW": r.window,
        "FROM (UTC)": fmt_time(r.bucket_start), "SAMPLES": r.samples, "LAG-AVG": _num(r.lag_avg, 0),
        "LAG-P95": _num(r.lag_p95, 0), "LAG-MAX": r.lag_max, "SLOPE/MIN": _num(r.lag_slope_per_min),
        "PRODUCE/S": _num(r.produce_rate), "CONSUME/S": _num(r.consume_rate),
        "ETA": _eta(r.catch_up_eta_s, r.catching_up),
        "LAG-S-P95": (_num(r.lag_seconds_p95) or "-") + (">" if r.lag_seconds_bounded else ""),
    } for r in rows], "no trends yet: run `python -m monitor analyze` (after the collector has run)"))
    last = read_last_analysis(engine)
    if last:
        print(f"last analysis: {fmt_time(last.finished_at)} UTC ({last.status}); '>' marks a lower bound")
    return 0


def cmd_rebalance_stats(args: argparse.Namespace) -> int:
    from monitor.config import load_settings
    from monitor.store import read_protocol_comparison, read_rebalance_stats, read_stability_ranking

    engine = _open_store(load_settings())
    stats = read_rebalance_stats(engine, args.cluster, args.group, args.window)
    ranking = [r for r in read_stability_ranking(engine, args.cluster) if args.group in (None, r.group_id)]
    protocols = read_protocol_comparison(engine, args.cluster)
    if args.json:
        print(json.dumps({"stats": [dataclasses.asdict(r) for r in stats],
                          "ranking": [dataclasses.asdict(r) for r in ranking],
                          "protocols": [dataclasses.asdict(r) for r in protocols]}, default=str))
        return 0
    top = lambda items: ",".join(f"{i['name']}({i['rebalances']})" for i in items) or None  # noqa: E731
    print(render_table([{
        "CLUSTER": r.cluster, "GROUP": r.group_id, "WINDOW": r.window, "FROM (UTC)": fmt_time(r.bucket_start),
        "PROTOCOL": r.protocol, "REBALANCES": r.rebalances, "TOTAL": fmt_duration(r.total_duration_ms),
        "MEAN": fmt_duration(None if r.mean_duration_ms is None else int(r.mean_duration_ms)),
        "P95": fmt_duration(None if r.p95_duration_ms is None else int(r.p95_duration_ms)),
        "MOVED": r.partitions_moved, "JOINED": r.members_joined, "LEFT": r.members_left,
        "TOP-CLIENTS": top(r.top_clients), "TOP-HOSTS": top(r.top_hosts),
    } for r in stats], "no rebalance statistics yet: run `python -m monitor analyze`"))
    if ranking:
        print("\nleast stable groups, last day:")
        print(render_table([{
            "RANK": r.rank, "CLUSTER": r.cluster, "GROUP": r.group_id, "PROTOCOL": r.protocol,
            "REBALANCES": r.rebalances, "PER-HOUR": _num(r.per_hour, 2), "STOPPED": fmt_duration(r.total_duration_ms),
            "WINDOW (UTC)": f"{fmt_time(r.window_start)} .. {fmt_time(r.window_end)}",
        } for r in ranking], ""))
    if protocols and not args.group:
        print("\nby protocol, last day:")
        print(render_table([{
            "CLUSTER": p.cluster, "PROTOCOL": p.protocol, "GROUPS": p.groups, "REBALANCES": p.rebalances,
            "PER-GROUP": _num(p.per_group), "MEAN": fmt_duration(None if p.mean_duration_ms is None
                                                                else int(p.mean_duration_ms)),
            "P95": fmt_duration(None if p.p95_duration_ms is None else int(p.p95_duration_ms)),
            "MOVED-AVG": _num(p.mean_partitions_moved),
        } for p in protocols], ""))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m monitor", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    dc = sub.add_parser("devcluster", help="run a real local Kafka (KRaft) for demos and tests")
    dc_sub = dc.add_subparsers(dest="action", required=True)
    for name, helptext in [("start", "create (first time) and start the cluster"),
                           ("stop", "stop every node (data is kept)"),
                           ("status", "show bootstrap servers and which nodes run"),
                           ("stop-node", "stop one node (failover tests)"),
                           ("start-node", "start one stopped node")]:
        p = dc_sub.add_parser(name, help=helptext)
        p.add_argument("--dir", default=None, help="cluster folder (default .lagmon/devcluster)")
        if name == "start":
            p.add_argument("--nodes", type=int, choices=(1, 3), default=1)
        if name == "status":
            p.add_argument("--json", action="store_true")
        if name in ("stop-node", "start-node"):
            p.add_argument("node", type=int)
        if name == "stop-node":
            p.add_argument("--kill", action="store_true", help="SIGKILL, as if the machine died")
    dc.set_defaults(func=cmd_devcluster)

    from monitor.sim import add_arguments as add_sim_arguments

    add_sim_arguments(sub.add_parser("sim", help="run a workload scenario with real producers and consumers"))
    sub.choices["sim"].set_defaults(func=cmd_sim)

    p = sub.add_parser("collect", help="sample every consumer group into the database")
    p.add_argument("--once", action="store_true", help="one cycle, then exit (non-zero if it failed)")
    p.add_argument("--interval", help="time between cycles, e.g. 10s (default LAGMON_POLL_INTERVAL or 10s)")
    p.add_argument("--metrics-port", default=os.environ.get("LAGMON_METRICS_PORT"),
                   help="serve Prometheus /metrics on this port, e.g. 9308 (default LAGMON_METRICS_PORT; off)")
    p.add_argument("--metrics-address", default=os.environ.get("LAGMON_METRICS_ADDRESS", "127.0.0.1"),
                   help="address for /metrics (default LAGMON_METRICS_ADDRESS or 127.0.0.1; 0.0.0.0 for all)")
    p.set_defaults(func=cmd_collect)

    p = sub.add_parser("healthcheck", help="exit 0 if the newest cycle of LAGMON_CLUSTER_NAME succeeded recently")
    p.set_defaults(func=cmd_healthcheck)

    p = sub.add_parser("db", help="database maintenance")
    p.add_argument("action", choices=["upgrade"])
    p.set_defaults(func=cmd_db)

    read_commands = [
        ("groups", cmd_groups, "every group now: state, members, lag"),
        ("lag", cmd_lag, "per-partition lag of one group (like kafka-consumer-groups --describe)"),
        ("rebalances", cmd_rebalances, "recorded rebalances"),
        ("events", cmd_events, "recorded changes (joins, leaves, state changes, ...)"),
    ]
    for name, func, helptext in read_commands:
        p = sub.add_parser(name, help=helptext)
        if name == "lag":
            p.add_argument("group")
        if name in ("rebalances", "events"):
            p.add_argument("--group")
            p.add_argument("--since", help="ISO-8601 (UTC unless it names a zone) or relative, e.g. -1h")
        if name == "rebalances":
            p.add_argument("--until", help="ISO-8601 or relative, e.g. -10m")
        p.add_argument("--cluster", help="only this cluster (default: all, or the only one)")
        p.add_argument("--json", action="store_true", help="JSON for scripts")
        p.set_defaults(func=func)

    p = sub.add_parser("alerts", help="firing, pending and recently resolved alerts; test, ack, silence")
    p.add_argument("action", nargs="?", choices=["list", "test", "ack", "silence"], default="list")
    p.add_argument("id", nargs="?", type=int, help="ack: the alert id")
    p.add_argument("--channel", help="test: the channel to send a test message to")
    p.add_argument("--match", action="append", metavar="FIELD=REGEX",
                   help="silence: rule, cluster, group, topic, severity or label.NAME (repeatable)")
    p.add_argument("--for", dest="duration", default="2h", help="silence: how long (default 2h)")
    p.add_argument("--comment", help="silence: why")
    p.add_argument("--by", help="ack/silence: who (default $USER)")
    p.add_argument("--since", default="-24h", help="show alerts resolved since (default -24h)")
    p.add_argument("--cluster", help="only this cluster (default: all)")
    p.add_argument("--json", action="store_true", help="JSON for scripts")
    p.set_defaults(func=cmd_alerts)

    p = sub.add_parser("status", help="Burrow-style status of every partition of one group, with lag in seconds")
    p.add_argument("group")
    p.add_argument("--cluster", help="which cluster (default: the only one)")
    p.add_argument("--json", action="store_true", help="JSON for scripts")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("commits", help="every commit of a group, exact, from the offsets-topic tail")
    p.add_argument("group")
    p.add_argument("--topic")
    p.add_argument("--partition", type=int)
    p.add_argument("--since", help="ISO-8601 (UTC unless it names a zone) or relative, e.g. -1h")
    p.add_argument("--cluster", help="only this cluster (default: the only one)")
    p.add_argument("--json", action="store_true", help="JSON for scripts")
    p.set_defaults(func=cmd_commits)

    p = sub.add_parser("analyze", help="PySpark: lag trends and rebalance statistics into the database")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--once", action="store_true", help="one run, then exit (the default)")
    how.add_argument("--every", metavar="DURATION", help="repeat, e.g. 5m, keeping one SparkSession")
    p.add_argument("--since", help="recompute from (ISO-8601 UTC, or relative: --since=-1d)")
    p.add_argument("--until", help="recompute up to (ISO-8601 UTC, or relative: --until=-1h)")
    p.set_defaults(func=cmd_analyze)

    p = sub.add_parser("trends", help="lag trends computed by analyze (newest bucket per group)")
    p.add_argument("--group")
    p.add_argument("--window", choices=["1m", "5m", "1h", "1d"], default="1h")
    p.add_argument("--topics", action="store_true", help="one row per group x topic as well")
    p.add_argument("--since", help="every bucket from then on (ISO-8601, or relative: --since=-6h)")
    p.add_argument("--cluster", help="only this cluster")
    p.add_argument("--json", action="store_true", help="JSON for scripts (every bucket)")
    p.set_defaults(func=cmd_trends)

    p = sub.add_parser("rebalance-stats", help="rebalance frequency computed by analyze, least stable groups")
    p.add_argument("--group")
    p.add_argument("--window", choices=["1h", "1d"], default="1d")
    p.add_argument("--cluster", help="only this cluster")
    p.add_argument("--json", action="store_true", help="JSON for scripts")
    p.set_defaults(func=cmd_rebalance_stats)

    p = sub.add_parser("demo", help="everything on embedded defaults: local Kafka, workload, lagmon")
    p.add_argument("--dir", default=None, help="cluster folder (default .lagmon/devcluster)")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "dir", "unset") is None:
        from monitor.devcluster import DEFAULT_DIR

        args.dir = DEFAULT_DIR
    try:
        return args.func(args)
    except LagmonError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
