"""`collect`, `db upgrade` and `healthcheck`: the collector process and what keeps it healthy."""

from __future__ import annotations

import argparse
import os
import threading

from monitor.cli.common import bootstrap_for, open_store, safe_url
from monitor.models import ConfigError
from monitor.stopping import stop_on_signals


def cmd_collect(args: argparse.Namespace) -> int:
    from monitor.alerts.engine import load_alerting
    from monitor.collector import Collector, describe_cycle
    from monitor.config import load_settings, parse_duration
    from monitor.kafka import KafkaSampler
    from monitor.store import Store, make_engine, upgrade

    stop = threading.Event()
    if not args.once:  # first: a signal during the start-up stops as cleanly as one later
        stop_on_signals(stop)
    settings = load_settings()
    shard = _shard(args, settings)
    interval = parse_duration(args.interval, "--interval") if args.interval else settings.poll_interval_s
    conf = bootstrap_for(settings)
    engine = make_engine(settings.database_url)
    upgrade(engine)
    from monitor.tail import build_offsets_tail

    store = Store(engine, shard)
    _warn_other_layouts(engine, settings.cluster_name, shard, interval)
    rules, dashboard_url = load_alerting(dict(os.environ))
    health = _health(engine, settings.cluster_name, conf, shard, rules)
    alert_engine, sender = _alerting(engine, settings.cluster_name, shard, rules, dashboard_url)
    observers = [alert_engine]
    tail = (
        None
        if args.once
        else build_offsets_tail(
            conf,
            store,
            settings.cluster_name,
            mode=settings.offsets_topic,
            span_s=settings.offsets_topic_span_s,
            report=lambda line: print(line, flush=True),
            on_commit=health.engine.record_commit,
        )
    )
    # Every group is listed (one cheap call); only this shard's are described, fetched and stored.
    sampler = KafkaSampler(
        conf,
        settings.cluster_name,
        lambda g: settings.wants_group(g) and shard.owns(g),
        timeout_s=min(10.0, max(interval, 2.0)),
        offsets_tail=tail,
    )
    if args.metrics_port:
        observers.append(_serve_metrics(args.metrics_port, args.metrics_address, settings.cluster_name))
    if not args.once:
        from monitor.pacing import GarbagePacer

        observers.append(GarbagePacer())  # last: after the cycle's own work, inside its measured time
    collector = Collector(sampler, store, settings.cluster_name, tail=tail, health=health, observers=observers)
    groups = "all groups"
    if settings.group_allow or settings.group_deny:
        groups = f"groups matching {getattr(settings.group_allow, 'pattern', '.*')!r}"
        if settings.group_deny:
            groups += f" except {settings.group_deny.pattern!r}"
    if shard.sharded:
        groups += f" in shard {shard} (crc32 of the group id)"
    print(
        f"lagmon collector: cluster {settings.cluster_name!r} at {conf['bootstrap.servers']}, {groups}, "
        f"every {interval:g}s, into {safe_url(settings.database_url)}; "
        f"offsets-topic tail {'on' if tail else 'off'}",
        flush=True,
    )
    if args.once:
        result = collector.poll_once()
        print(describe_cycle(result))
        health.save()
        sender.drain_once()  # what this cycle queued goes out now (failures wait for the next start)
        return 0 if result.ok else 1
    sender.start()
    try:
        collector.run(interval, stop, report=lambda line: print(line, flush=True))
    finally:
        sender.stop()
        health.save()
    print("collector stopped")
    return 0


def _shard(args: argparse.Namespace, settings):
    """--shard wins over LAGMON_SHARD."""
    from monitor.shard import parse_shard

    return parse_shard(args.shard, "--shard") if getattr(args, "shard", None) else settings.shard


def _warn_other_layouts(engine, cluster: str, shard, interval_s: float) -> None:
    """Collectors of this cluster with another shard count, still running, would leave groups twice or never sampled."""
    import time

    from monitor.shard import compute_other_layouts
    from monitor.store import read_shards

    recent = [
        r.shard for r in read_shards(engine, cluster) if time.time() * 1000 - r.last_sample_at < 3000 * interval_s
    ]
    others = compute_other_layouts(shard, recent)
    if others:
        print(
            f"warning: collector shard(s) {', '.join(others)} of cluster {cluster!r} sampled in the last "
            f"{3 * interval_s:g}s, but this one is {shard}: every collector of a cluster needs the same n "
            f"(stop the old ones)",
            flush=True,
        )


def _serve_metrics(port: str, address: str, cluster: str):
    """Prometheus /metrics from each cycle's snapshot and health report."""
    from monitor.exporter import MetricsExporter

    if not port.isdigit():
        raise ConfigError(f"--metrics-port / LAGMON_METRICS_PORT: {port!r} is not a port number")
    exporter = MetricsExporter(cluster)
    try:
        exporter.serve(int(port), address)
    except OSError as e:
        raise ConfigError(f"cannot serve metrics on {address}:{port}: {e.strerror}") from e
    print(f"metrics: http://{address}:{port}/metrics", flush=True)
    return exporter


def _health(engine, cluster: str, conf: dict[str, str], shard, rules):
    """The health step: the engine (with exact lag seconds if LAGMON_LAG_EXACT_TOP asks) and its store edges."""
    from monitor.health import HealthEngine, HealthStage

    exact_top = os.environ.get("LAGMON_LAG_EXACT_TOP", "0").strip()
    if not exact_top.isdigit():
        raise ConfigError(f"LAGMON_LAG_EXACT_TOP: {exact_top!r} is not a whole number (0 = off, e.g. 20)")
    reader = None
    if int(exact_top):
        from monitor.kafka import RecordTimestampReader

        reader = RecordTimestampReader(conf)
    report = lambda line: print(line, flush=True)  # noqa: E731
    judge = HealthEngine(cluster, rules.evaluator, exact_reader=reader, exact_top=int(exact_top), report=report)
    return HealthStage(engine, judge, shard, report=report)


def _alerting(engine, cluster: str, shard, rules, dashboard_url):
    """The alert engine (a collector observer) and its outbox sender."""
    from monitor.alerts.engine import AlertEngine
    from monitor.alerts.notify import OutboxSender

    report = lambda line: print(line, flush=True)  # noqa: E731
    sender = OutboxSender(engine, rules.channels, report=report)
    alert_engine = AlertEngine(
        engine, cluster, rules, dashboard_url=dashboard_url, sender=sender, report=report, shard=shard
    )
    channels = ", ".join(rules.channels) or "no channels (set LAGMON_CHANNELS)"
    print(f"alerts: {len(rules.rules)} rules from {rules.source}; sending to {channels}", flush=True)
    return alert_engine, sender


def cmd_db(args: argparse.Namespace) -> int:
    from monitor.config import load_settings
    from monitor.store import upgrade

    url = load_settings().database_url
    upgrade(url)
    print(f"database {safe_url(url)} is at the latest schema")
    return 0


def cmd_healthcheck(args: argparse.Namespace) -> int:
    """For container health checks: 0 when this cluster's (or collector shard's) newest cycle succeeded recently."""
    import time

    from monitor.config import load_settings
    from monitor.store import read_clusters, read_shards

    settings = load_settings()
    shard = _shard(args, settings)
    max_age_s = max(60.0, 3 * settings.poll_interval_s)
    engine = open_store(settings)
    if shard.sharded:
        row = next((r for r in read_shards(engine, settings.cluster_name) if r.shard == shard.label), None)
    else:
        row = next((r for r in read_clusters(engine) if r.cluster == settings.cluster_name), None)
    if row is None:
        print(
            f"unhealthy: no sample of cluster {settings.cluster_name!r}"
            f"{f' by shard {shard}' if shard.sharded else ''} yet"
        )
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
