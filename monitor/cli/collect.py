"""`collect`, `db upgrade` and `healthcheck`: the collector process and what keeps it healthy."""

from __future__ import annotations

import argparse
import threading

from monitor.cli.common import bootstrap_for, open_store
from monitor.clock import wall_ms
from monitor.logs import get_logger
from monitor.models import ConfigError
from monitor.stopping import join_all, stop_on_signals

log = get_logger("collector")


def add_collect_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--once", action="store_true", help="one cycle, then exit (non-zero if it failed)")
    p.add_argument("--interval", help="time between cycles, e.g. 10s (default LAGMON_POLL_INTERVAL or 10s)")
    p.add_argument(
        "--metrics-port", help="serve Prometheus /metrics on this port, e.g. 9308 (default LAGMON_METRICS_PORT; off)"
    )
    p.add_argument(
        "--metrics-address", help="address for /metrics (default LAGMON_METRICS_ADDRESS or 127.0.0.1; 0.0.0.0 for all)"
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


def read_role_arguments(path: str) -> argparse.Namespace | None:
    """The arguments of the `collect` role recorded at `path`, parsed as `collect` parses them; None without one."""
    import os
    from pathlib import Path

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
    if not args.once and args.worker is None:  # before any import: the supervisor stays small (no Kafka client)
        from monitor.supervisor import supervise

        stop = threading.Event()
        stop_on_signals(stop)
        return supervise(collect_arguments(args), stop)
    return _run_collector(args)


def _run_collector(args: argparse.Namespace) -> int:
    """The collector itself: `collect --once`, or the supervisor's worker."""
    from monitor.alerts.engine import load_alerting
    from monitor.alerts.lifecycle import WorkerRestart
    from monitor.clock import CycleClock, RetentionClock
    from monitor.collector import STOP_WAIT_S, Collector, log_cycle
    from monitor.config import AlertSettings, HealthStageSettings, MetricsSettings, load_settings, parse_duration
    from monitor.kafka import KafkaSampler
    from monitor.store import Store, make_engine, safe_url, store_errors, upgrade
    from monitor.version import lagmon_version

    stop = threading.Event()
    if not args.once:  # first: a signal during the start-up stops as cleanly as one later
        stop_on_signals(stop)
        from monitor.supervisor import watch_supervisor

        watch_supervisor(args.worker, stop)
    settings = load_settings()
    exact_top = HealthStageSettings.from_env().exact_top
    alert_settings = AlertSettings.from_env()
    metrics = MetricsSettings.from_env()
    metrics_port, metrics_address = _metrics_endpoint(args, metrics)
    cluster, groups = settings.kafka.cluster_name, settings.collector
    shard = _shard(args, settings)
    interval = parse_duration(args.interval, "--interval") if args.interval else groups.poll_interval_s
    group_filter, topic_filter = groups.group_filter, groups.topic_filter
    conf = bootstrap_for(settings.kafka)
    engine = make_engine(settings.store.database_url)
    with store_errors("cannot open the store"):
        upgrade(engine)
    from monitor.tail import build_offsets_tail

    # a write waits for a lock held elsewhere at most half an interval: the cycle is kept, the next one comes on time
    store = Store(engine, shard, busy_timeout_ms=int(min(10.0, max(0.5, interval / 2)) * 1000))
    if args.worker_restarts:
        _record_restart(store, cluster, args.worker_restarts, args.worker_last_exit)
    _warn_other_layouts(engine, cluster, shard, interval)
    rules, dashboard_url = load_alerting(alert_settings)
    health = _health(engine, cluster, conf, shard, rules, exact_top)
    retention_now = RetentionClock()
    restart = None
    if args.worker_restarts:
        restart = WorkerRestart(wall_ms(), args.worker_restarts, args.worker_last_exit or "died")
    alert_engine, sender = _alerting(
        engine, cluster, shard, rules, dashboard_url, alert_settings.alertmanager_resend_s, retention_now, restart
    )
    observers = [alert_engine]
    tail = (
        None
        if args.once
        else build_offsets_tail(
            conf,
            store,
            cluster,
            mode=settings.tail.mode,
            span_s=settings.tail.span_s,
            on_commit=_wanted_commits(health.engine.record_commit, topic_filter),
            counts_commits=lambda group, topic: group_filter.wants(group) and topic_filter.wants(topic),
        )
    )
    share_tail = None
    if tail is not None:
        from monitor.share_tail import build_share_tail

        share_tail = build_share_tail(conf)
    # Every group is listed (one cheap call); only this shard's are described, fetched and stored.
    sampler = KafkaSampler(
        conf,
        cluster,
        lambda g: group_filter.wants(g) and shard.owns(g),
        timeout_s=min(10.0, max(interval, 2.0)),
        offsets_tail=tail,
        wants_topic=None if topic_filter.unfiltered else topic_filter.wants,
        share_tail=share_tail,
    )
    parts = [] if share_tail is None else [share_tail]  # started with `stop` below, joined on the way out
    if metrics_port is not None:
        parts.append(_serve_metrics(metrics_port, metrics_address, cluster, metrics.granularity))
        parts[-1].count_restarts(args.worker_restarts)
        observers.append(parts[-1])
    if not args.once:
        from monitor.pacing import GarbagePacer

        observers.append(GarbagePacer())  # last: after the cycle's own work, inside its measured time
    collector = Collector(
        sampler,
        store,
        cluster,
        tail=tail,
        health=health,
        observers=observers,
        backlog_bytes=settings.store.backlog_mb << 20,
        now_ms=CycleClock(),
        retention_now=retention_now,
        carry_from_store=not args.once,  # one answer is all `--once` gets: it takes it as it is
    )
    log.info(
        "lagmon %s collector: cluster %r at %s, %s, every %gs, into %s; offsets-topic tail %s",
        lagmon_version(),
        cluster,
        conf["bootstrap.servers"],
        _describe_groups(groups, shard),
        interval,
        safe_url(settings.store.database_url),
        "on" if tail else "off",
    )
    if not args.once:
        parts.append(sender)
    threads = [part.start(stop) for part in parts]
    try:
        if args.once:
            result = collector.poll_once()
            log_cycle(result)
            health.save()
            sender.drain_once()  # what this cycle queued goes out now (failures wait for the next start)
            sender.repost_once()  # and an Alertmanager keeps the firing alerts (a --once run from cron)
            return 0 if result.ok else 1
        collector.run(interval, stop)
    finally:
        stop.set()  # also on the way out of an error: every part ends
        join_all(threads, STOP_WAIT_S)
        if not args.once:
            health.save()
    log.info("collector stopped")
    return 0


def _record_restart(store, cluster: str, restarts: int, last_exit: str | None) -> None:
    """A failed sample row says, on the Health page and to `healthcheck`, why a cycle was lost."""
    reason = f"the collector's worker {last_exit or 'died'} and was started again (restart {restarts})"
    try:
        store.write_sample_error(cluster, wall_ms(), 0, [reason])
    except Exception as e:  # the store may be why it died: the first cycle says so
        log.warning("restart not recorded in the store: %s: %s", type(e).__name__, e)


def _shard(args: argparse.Namespace, settings):
    """--shard wins over LAGMON_SHARD."""
    from monitor.shard import parse_shard

    return parse_shard(args.shard, "--shard") if getattr(args, "shard", None) else settings.collector.shard


def _metrics_endpoint(args: argparse.Namespace, metrics) -> tuple[int | None, str]:
    """--metrics-port and --metrics-address win over LAGMON_METRICS_PORT and LAGMON_METRICS_ADDRESS."""
    from monitor.config import parse_port

    port = parse_port(args.metrics_port, "--metrics-port") if args.metrics_port else metrics.port
    return port, metrics.address if args.metrics_address is None else args.metrics_address


def _describe_groups(groups, shard) -> str:
    text = _matching("groups", groups.group_filter) or "all groups"
    if not groups.topic_filter.unfiltered:
        text += ", " + _matching("topics", groups.topic_filter)
    if shard.sharded:
        text += f" in shard {shard} (crc32 of the group id)"
    return text


def _matching(what: str, names) -> str:
    """A Filter in words for the start-up line; empty when it lets everything through."""
    if names.unfiltered:
        return ""
    text = f"{what} matching {getattr(names.allow, 'pattern', '.*')!r}"
    return text + (f" except {names.deny.pattern!r}" if names.deny else "")


def _wanted_commits(record_commit, topics):
    """The tail's exact commits for the health engine, less those of topics left out (LAGMON_TOPIC_ALLOW/DENY)."""
    if topics.unfiltered:
        return record_commit

    def record(group, tp, offset, at):
        if topics.wants(tp.topic):
            record_commit(group, tp, offset, at)

    return record


def _warn_other_layouts(engine, cluster: str, shard, interval_s: float) -> None:
    """Collectors of this cluster with another shard count, still running, would leave groups twice or never sampled."""

    from monitor.shard import compute_other_layouts
    from monitor.store import read_shards

    recent = [r.shard for r in read_shards(engine, cluster) if wall_ms() - r.last_sample_at < 3000 * interval_s]
    others = compute_other_layouts(shard, recent)
    if others:
        log.warning(
            "collector shard(s) %s of cluster %r sampled in the last %gs, but this one is %s: "
            "every collector of a cluster needs the same n (stop the old ones)",
            ", ".join(others),
            cluster,
            3 * interval_s,
            shard,
        )


def _serve_metrics(port: int, address: str, cluster: str, granularity: str = "partition"):
    """Prometheus /metrics from each cycle's snapshot and health report."""
    from monitor.exporter import MetricsExporter

    exporter = MetricsExporter(cluster, granularity)
    try:
        exporter.bind(port, address)
    except OSError as e:
        raise ConfigError(f"cannot serve metrics on {address}:{port}: {e.strerror}") from e
    log.info("metrics: http://%s:%s/metrics (%s granularity)", address, port, granularity)
    return exporter


def _health(engine, cluster: str, conf: dict[str, str], shard, rules, exact_top: int):
    """The health step: the engine (with exact lag seconds for the `exact_top` worst partitions) and its store edges."""
    from monitor.health import HealthEngine, HealthStage

    reader = None
    if exact_top:
        from monitor.kafka import RecordTimestampReader

        reader = RecordTimestampReader(conf)
    judge = HealthEngine(cluster, rules.evaluator, exact_reader=reader, exact_top=exact_top)
    return HealthStage(engine, judge, shard)


def _alerting(engine, cluster: str, shard, rules, dashboard_url, resend_s: float, retention_now, restart):
    """The alert engine (a collector observer) and its outbox sender."""
    from monitor.alerts.engine import AlertEngine
    from monitor.alerts.notify import OutboxSender

    sender = OutboxSender(engine, rules.channels, dashboard_url=dashboard_url, resend_s=resend_s)
    alert_engine = AlertEngine(
        engine,
        cluster,
        rules,
        dashboard_url=dashboard_url,
        sender=sender,
        shard=shard,
        retention_now=retention_now,
        restart=restart,
    )
    channels = ", ".join(rules.channels) or "no channels (set LAGMON_CHANNELS)"
    get_logger("alerts").info("%d alert rules from %s; sending to %s", len(rules.rules), rules.source, channels)
    return alert_engine, sender


def cmd_db(args: argparse.Namespace) -> int:
    from monitor.config import load_settings
    from monitor.store import safe_url, upgrade

    url = load_settings().store.database_url
    migrated = upgrade(url)
    get_logger("store").info("database %s %s the latest schema", safe_url(url), "brought to" if migrated else "is at")
    return 0


def cmd_healthcheck(args: argparse.Namespace) -> int:
    """For container health checks: 0 when this cluster's (or collector shard's) newest cycle succeeded recently."""
    import time

    from monitor.config import load_settings, parse_duration
    from monitor.shard import parse_shard
    from monitor.store import read_clusters, read_shards

    settings = load_settings()
    role = read_role_arguments(args.role_file) if args.role_file else None
    # What the collector runs with: this command's options, else the role's, else the settings.
    interval_text, interval_name = args.interval, "--interval"
    if interval_text is None and role is not None and role.interval:
        interval_text, interval_name = role.interval, f"--interval in {args.role_file}"
    shard_text, shard_name = args.shard, "--shard"
    if shard_text is None and role is not None and role.shard:
        shard_text, shard_name = role.shard, f"--shard in {args.role_file}"
    interval = parse_duration(interval_text, interval_name) if interval_text else settings.collector.poll_interval_s
    shard = parse_shard(shard_text, shard_name) if shard_text else settings.collector.shard
    cluster = settings.kafka.cluster_name
    max_age_s = max(60.0, 3 * interval)
    engine = open_store(settings.store.database_url)
    if shard.sharded:
        row = next((r for r in read_shards(engine, cluster) if r.shard == shard.label), None)
    else:
        row = next((r for r in read_clusters(engine) if r.cluster == cluster), None)
    if row is None:
        print(f"unhealthy: no sample of cluster {cluster!r}{f' by shard {shard}' if shard.sharded else ''} yet")
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
