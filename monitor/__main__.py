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
    sampler = KafkaSampler(conf, settings.cluster_name, settings.wants_group, timeout_s=min(10.0, max(interval, 2.0)))
    collector = Collector(sampler, Store(engine), settings.cluster_name)
    groups = "all groups"
    if settings.group_allow or settings.group_deny:
        groups = f"groups matching {getattr(settings.group_allow, 'pattern', '.*')!r}"
        if settings.group_deny:
            groups += f" except {settings.group_deny.pattern!r}"
    print(f"lagmon collector: cluster {settings.cluster_name!r} at {conf['bootstrap.servers']}, {groups}, "
          f"every {interval:g}s, into {_safe_url(settings.database_url)}", flush=True)
    if args.once:
        result = collector.poll_once()
        print(describe_cycle(result))
        return 0 if result.ok else 1
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        collector.run(interval, stop, report=lambda line: print(line, flush=True))
    except KeyboardInterrupt:
        stop.set()
    print("collector stopped")
    return 0


def cmd_db(args: argparse.Namespace) -> int:
    from monitor.config import load_settings
    from monitor.store import upgrade

    url = load_settings().database_url
    upgrade(url)
    print(f"database {_safe_url(url)} is at the latest schema")
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
            "DURATION": fmt_duration(r.duration_ms) if r.ended_at else "in progress",
            "PROTOCOL": r.protocol, "TRIGGER": r.trigger.value, "MEMBERS": f"{r.members_before}->{r.members_after}",
            "JOINED": ",".join(m.client_id or m.member_id for m in r.joined) or None,
            "LEFT": ",".join(m.client_id or m.member_id for m in r.left) or None,
            "MOVED": r.partitions_moved,
            "GENERATION": (f"{r.generation_before}->{r.generation_after}"
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
    p.set_defaults(func=cmd_collect)

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
