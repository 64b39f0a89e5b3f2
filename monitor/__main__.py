"""lagmon's command line: `lagmon COMMAND ...` or `python -m monitor COMMAND ...` (a thin layer over the library).

Logs (monitor/logs.py) go to stderr as LAGMON_LOG_FORMAT says; what a command produces goes to stdout."""

from __future__ import annotations

import argparse
import json
import os
import sys

from monitor.cli.alerts import cmd_alerts, cmd_status
from monitor.cli.analysis import cmd_analyze, cmd_rebalance_stats, cmd_trends
from monitor.cli.collect import (
    add_collect_arguments,
    add_healthcheck_arguments,
    cmd_collect,
    cmd_db,
    cmd_healthcheck,
)
from monitor.cli.dashboard import cmd_dashboard
from monitor.cli.read import (
    cmd_collectors,
    cmd_commits,
    cmd_events,
    cmd_groups,
    cmd_lag,
    cmd_members,
    cmd_rebalances,
)
from monitor.logs import configure_logging, get_logger
from monitor.models import LagmonError, StoreUnavailable
from monitor.version import describe_version

log = get_logger("cli")
EXIT_TEMPFAIL = 75  # sysexits' EX_TEMPFAIL: something this command needs is away for now


def cmd_devcluster(args: argparse.Namespace) -> int:
    from monitor import devcluster  # lazy: 0.09 s (monitor/cli/__init__.py)

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
    elif args.action == "archive":
        for path in devcluster.write_class_archives():
            print(f"wrote {path} ({path.stat().st_size / 2**20:.0f} MiB)")
    return 0


def cmd_sim(args: argparse.Namespace) -> int:
    from monitor import sim  # lazy: 0.03 s (monitor/cli/__init__.py)

    return sim.main(args)


def cmd_demo(args: argparse.Namespace) -> int:
    from monitor import demo  # lazy: 0.16 s (monitor/cli/__init__.py)

    return demo.run(args.dir)


def program_name(argv0: str) -> str:
    """`lagmon` when run as the console script, else `python -m monitor`."""
    return "lagmon" if os.path.basename(argv0) == "lagmon" else "python -m monitor"


def build_parser(prog: str = "python -m monitor") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument("--version", action="version", version=describe_version())
    sub = parser.add_subparsers(dest="command", required=True)
    for add_commands in (
        add_workload_commands,
        add_collector_commands,
        add_read_commands,
        add_alert_commands,
        add_analysis_commands,
        add_front_commands,
    ):
        add_commands(sub)
    return parser


def add_workload_commands(sub) -> None:
    """A real local Kafka and workloads on it: for the demo, tests and benchmarks."""
    dc = sub.add_parser("devcluster", help="run a real local Kafka (KRaft) for demos and tests")
    dc_sub = dc.add_subparsers(dest="action", required=True)
    for name, helptext in [
        ("start", "create (first time) and start the cluster"),
        ("stop", "stop every node (data is kept)"),
        ("status", "show bootstrap servers and which nodes run"),
        ("stop-node", "stop one node (failover tests)"),
        ("start-node", "start one stopped node"),
        ("archive", "write the class archives that start nodes sooner (make setup does)"),
    ]:
        p = dc_sub.add_parser(name, help=helptext)
        if name == "archive":
            continue
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

    from monitor.sim import add_arguments as add_sim_arguments  # lazy: only the parser of `sim` needs it

    add_sim_arguments(sub.add_parser("sim", help="run a workload scenario with real producers and consumers"))
    sub.choices["sim"].set_defaults(func=cmd_sim)


def add_collector_commands(sub) -> None:
    """The collector, its health check and its database."""
    p = sub.add_parser("collect", help="sample every consumer group into the database")
    add_collect_arguments(p)
    p.set_defaults(func=cmd_collect)

    p = sub.add_parser("healthcheck", help="exit 0 if the newest cycle of LAGMON_CLUSTER_NAME succeeded recently")
    add_healthcheck_arguments(p)
    p.set_defaults(func=cmd_healthcheck)

    p = sub.add_parser("db", help="database maintenance")
    p.add_argument("action", choices=["upgrade"])
    p.set_defaults(func=cmd_db)


def add_read_commands(sub) -> None:
    """What the collector stored, as kafka-consumer-groups shows it."""
    read_commands = [
        ("groups", cmd_groups, "every group now: state, members, lag"),
        ("lag", cmd_lag, "per-partition lag of one group (like kafka-consumer-groups --describe)"),
        ("members", cmd_members, "members of one group now: partitions, and a streams member's tasks"),
        ("rebalances", cmd_rebalances, "recorded rebalances"),
        ("events", cmd_events, "recorded changes (joins, leaves, state changes, ...)"),
    ]
    for name, func, helptext in read_commands:
        p = sub.add_parser(name, help=helptext)
        if name in ("lag", "members"):
            p.add_argument("group")
        if name in ("rebalances", "events"):
            p.add_argument("--group")
            p.add_argument("--since", help="ISO-8601 (UTC unless it names a zone) or relative, e.g. -1h")
        if name == "rebalances":
            p.add_argument("--until", help="ISO-8601 or relative, e.g. -10m")
        p.add_argument("--cluster", help="only this cluster (default: all, or the only one)")
        p.add_argument("--json", action="store_true", help="JSON for scripts")
        p.set_defaults(func=func)

    p = sub.add_parser("commits", help="every commit of a group, exact, from the offsets-topic tail")
    p.add_argument("group")
    p.add_argument("--topic")
    p.add_argument("--partition", type=int)
    p.add_argument("--since", help="ISO-8601 (UTC unless it names a zone) or relative, e.g. -1h")
    p.add_argument("--cluster", help="only this cluster (default: the only one)")
    p.add_argument("--json", action="store_true", help="JSON for scripts")
    p.set_defaults(func=cmd_commits)

    p = sub.add_parser("collectors", help="coordinated collectors (--shard kafka): what each holds, its tail's lag")
    p.add_argument("--cluster", help="only this cluster (default: the only one)")
    p.add_argument("--json", action="store_true", help="JSON for scripts")
    p.set_defaults(func=cmd_collectors)


def add_alert_commands(sub) -> None:
    """Alerts, and the health verdicts behind them."""
    p = sub.add_parser("alerts", help="firing, pending and recently resolved alerts; test, ack, silence")
    p.add_argument("action", nargs="?", choices=["list", "test", "ack", "silence"], default="list")
    p.add_argument("id", nargs="?", type=int, help="ack: the alert id")
    p.add_argument("--channel", help="test: the channel to send a test message to")
    p.add_argument(
        "--match",
        action="append",
        metavar="FIELD=REGEX",
        help="silence: rule, cluster, group, topic, severity or label.NAME (repeatable)",
    )
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


def add_analysis_commands(sub) -> None:
    """The Spark analysis and its results."""
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


def add_front_commands(sub) -> None:
    """The demo and the dashboard."""
    p = sub.add_parser("demo", help="everything on embedded defaults: local Kafka, workload, lagmon")
    p.add_argument("--dir", default=None, help="cluster folder (default .lagmon/devcluster)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        "dashboard",
        help="the Streamlit dashboard (app.py); one stop signal or many stop it cleanly",
        description="Options are Streamlit's, e.g. --server.port 8502 --server.address 0.0.0.0.",
    )
    p.set_defaults(func=cmd_dashboard)  # every other argument goes to `streamlit run app.py` (main)


TIME_OPTIONS = ("--since", "--until")


def join_relative_times(argv: list[str]) -> list[str]:
    """`--since -1h` -> `--since=-1h`: argparse takes a value starting with '-' for an option."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] in TIME_OPTIONS and arg.startswith("-") and arg[1:2].isdigit():
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def setup_logging() -> None:
    """Logs as LAGMON_LOG_FORMAT and LAGMON_LOG_LEVEL say; a malformed one is said in the default format."""
    from monitor.config import LogSettings  # lazy: 0.06 s (monitor/cli/__init__.py)

    configure_logging()
    settings = LogSettings.from_env()  # a ConfigError is logged by main, as any other
    configure_logging(settings.format, settings.level)


def main(argv: list[str] | None = None) -> int:
    """The entry point of `lagmon` (the console script) and of `python -m monitor`."""
    parser = build_parser(program_name(sys.argv[0]))
    args, unknown = parser.parse_known_args(join_relative_times(sys.argv[1:] if argv is None else argv))
    if args.command == "dashboard":
        args.streamlit_options = unknown
    elif unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        setup_logging()
        if getattr(args, "dir", "unset") is None:
            from monitor.devcluster import DEFAULT_DIR  # lazy: reads LAGMON_KAFKA_LIBS and LAGMON_DEVCLUSTER_HEAP

            args.dir = DEFAULT_DIR
        return args.func(args)
    except StoreUnavailable as e:  # passes: a supervised collector starts again
        log.error("%s", e)
        return EXIT_TEMPFAIL
    except LagmonError as e:
        log.error("%s", e)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception:  # a bug: still one log record (JSON under LAGMON_LOG_FORMAT=json), with its traceback
        log.critical("unexpected error", exc_info=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
