"""`collect`, `db upgrade` and `healthcheck`: the collector process and what keeps it healthy."""

from __future__ import annotations

import argparse
import os
import socket
import threading
import time
from pathlib import Path

from monitor.cli.common import bootstrap_for, open_store
from monitor.config import LogSettings, MetricsSettings, load_settings, parse_duration, parse_interval, parse_port
from monitor.logs import get_logger
from monitor.models import ConfigError
from monitor.shard import parse_shard
from monitor.stopping import stop_on_signals
from monitor.supervisor import become_supervisor, watch_supervisor


def add_collect_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--once", action="store_true", help="one cycle, then exit (non-zero if it failed)")
    p.add_argument("--interval", help="time between cycles, e.g. 10s (default LAGMON_POLL_INTERVAL or 10s)")
    p.add_argument(
        "--metrics-port", help="serve Prometheus /metrics on this port, e.g. 9308 (default LAGMON_METRICS_PORT; off)"
    )
    p.add_argument(
        "--metrics-address", help="address for /metrics (default LAGMON_METRICS_ADDRESS or 127.0.0.1; 0.0.0.0 for all)"
    )
    p.add_argument(
        "--tail-wait",
        help="with --once: wait at most this long for the offsets-topic tails to read to their end, as share and "
        "streams groups come from them (default 60s)",
    )
    p.add_argument("--shard", help="collect only shard i of n of the groups, e.g. 2/3 (default LAGMON_SHARD; all)")
    # The supervisor's worker (monitor/supervisor.py) and what it is told of the workers before it.
    p.add_argument("--worker", type=int, metavar="SUPERVISOR_PID", help=argparse.SUPPRESS)
    p.add_argument("--worker-restarts", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--worker-last-exit", help=argparse.SUPPRESS)


FORWARDED_OPTIONS = ("interval", "metrics_port", "metrics_address", "shard")  # from `collect` to its worker


def collect_arguments(args: argparse.Namespace) -> list[str]:
    """The options `collect` was given, as its worker is given them."""
    out = []
    for name in FORWARDED_OPTIONS:
        value = getattr(args, name, None)
        if value is not None:
            out += [f"--{name.replace('_', '-')}", value]
    return out


def add_healthcheck_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--interval",
        help="the collector's --interval: its newest cycle must be younger than 3 of them, 60s at least "
        "(default LAGMON_POLL_INTERVAL or 10s)",
    )
    p.add_argument("--shard", help="judge this collector shard's newest cycle, e.g. 2/3 (default LAGMON_SHARD)")
    p.add_argument(
        "--role-file",
        metavar="FILE",
        help="the --interval and --shard of the `collect` role recorded in FILE (the image's entrypoint writes "
        "its role and arguments there, each ending in a NUL byte; a missing file is ignored); options given "
        "here win",
    )


def load_role_arguments(path: str) -> argparse.Namespace | None:
    """The arguments of the `collect` role recorded at `path`, parsed as `collect` parses them; None without one."""
    try:
        recorded = [os.fsdecode(a) for a in Path(path).read_bytes().split(b"\0")[:-1]]
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ConfigError(f"--role-file: cannot read {path}: {e.strerror}") from e
    if not recorded or recorded[0] != "collect":
        role = repr(recorded[0]) if recorded else "nothing"
        raise ConfigError(f"--role-file: {path} records the role {role}, not collect")
    parser = argparse.ArgumentParser(prog="collect", add_help=False)
    add_collect_arguments(parser)
    known, _ = parser.parse_known_args(recorded[1:])  # as the role parsed them, options of later versions aside
    return known


def cmd_collect(args: argparse.Namespace) -> int:
    if not args.once and args.worker is None:
        logs = LogSettings.from_env()
        become_supervisor(collect_arguments(args), logs.format, logs.level)
    return _run_collector(args)


def _run_collector(args: argparse.Namespace) -> int:
    """The collector itself: `collect --once`, or the supervisor's worker. Its flags win over LAGMON_*."""
    # lazy: the Kafka client, SQLAlchemy and Apprise (monitor/cli/__init__.py)
    from monitor.wiring import CollectOptions, build_collector, run_collector

    stop = threading.Event()
    if not args.once:  # first: a signal during the start-up stops as cleanly as one later
        stop_on_signals(stop)
        watch_supervisor(args.worker, stop)
    settings = load_settings()
    metrics = MetricsSettings.from_env()
    options = CollectOptions(
        interval_s=parse_interval(args.interval, "--interval") if args.interval else settings.collector.poll_interval_s,
        shard=parse_shard(args.shard, "--shard") if args.shard else settings.collector.shard,
        metrics_port=parse_port(args.metrics_port, "--metrics-port") if args.metrics_port else metrics.port,
        metrics_address=metrics.address if args.metrics_address is None else args.metrics_address,
        once=args.once,
        tail_wait_s=parse_duration(args.tail_wait, "--tail-wait") if args.tail_wait else 60.0,
        restarts=args.worker_restarts,
        last_exit=args.worker_last_exit,
    )
    return run_collector(build_collector(settings, options, bootstrap_for(settings.kafka)), stop)


def cmd_db(args: argparse.Namespace) -> int:
    from monitor.store import (  # lazy: SQLAlchemy (monitor/cli/__init__.py)
        safe_url,
        upgrade,
    )

    url = load_settings().store.database_url
    migrated = upgrade(url)
    get_logger("store").info("database %s %s the latest schema", safe_url(url), "brought to" if migrated else "is at")
    return 0


def cmd_healthcheck(args: argparse.Namespace) -> int:
    """For container health checks: 0 when this cluster's (collector shard's, or coordinated collector's on this
    host) newest cycle succeeded recently."""
    from monitor.store import read_clusters, read_shards  # lazy: SQLAlchemy (monitor/cli/__init__.py)
    from monitor.store.samples import read_host_newest

    settings = load_settings()
    role = load_role_arguments(args.role_file) if args.role_file else None
    # What the collector runs with: this command's options, else the role's, else the settings.
    interval_text, interval_name = args.interval, "--interval"
    if interval_text is None and role is not None and role.interval:
        interval_text, interval_name = role.interval, f"--interval in {args.role_file}"
    shard_text, shard_name = args.shard, "--shard"
    if shard_text is None and role is not None and role.shard:
        shard_text, shard_name = role.shard, f"--shard in {args.role_file}"
    interval = parse_interval(interval_text, interval_name) if interval_text else settings.collector.poll_interval_s
    shard = parse_shard(shard_text, shard_name) if shard_text else settings.collector.shard
    cluster = settings.kafka.cluster_name
    max_age_s = max(60.0, 3 * interval)
    engine = open_store(settings.store.database_url)
    if shard.coordinated:  # this host's collector: its name is "host-pid" (a container's host name is its own)
        row, by = read_host_newest(engine, cluster, socket.gethostname()), f" by a collector on {socket.gethostname()}"
    elif shard.sharded:
        row, by = next((r for r in read_shards(engine, cluster) if r.shard == shard.label), None), f" by shard {shard}"
    else:
        row, by = next((r for r in read_clusters(engine) if r.cluster == cluster), None), ""
    if row is None:
        print(f"unhealthy: no sample of cluster {cluster!r}{by} yet")
        return 1
    age_s = time.time() - row.last_sample_at / 1000
    if not row.last_ok:
        print(f"unhealthy: the newest cycle failed: {row.last_errors[0] if row.last_errors else 'unknown error'}")
        return 1
    if age_s > max_age_s:
        print(f"unhealthy: the newest sample is {age_s:.0f}s old (more than {max_age_s:.0f}s)")
        return 1
    print(f"ok: newest sample {age_s:.0f}s ago (limit {max_age_s:.0f}s: 3 intervals of {interval:g}s, 60s at least)")
    return 0
