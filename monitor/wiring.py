"""The collector process in one place: what it is built of, in what order its parts start, and how it ends.

`build_collector` makes every part from the settings and returns them with the
background ones in start order; `run_collector` starts those in that order, runs
the cycle loop in the calling thread, then sets `stop` and joins them in reverse
(docs/architecture.md section 3, "Long-running parts"). A `--once` run starts the
tails and the exporter, waits (bounded) for the tails to read to their end, since
share and streams groups come from them, then drains the alert outbox by hand
after its one cycle. A coordinated collector (`--shard kafka`) starts its member of
the collectors' group first and its first cycle waits (bounded) for partitions.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from monitor.alerts.engine import AlertEngine, load_alerting
from monitor.alerts.lifecycle import WorkerRestart
from monitor.alerts.notify import OutboxSender
from monitor.clock import CycleClock, RetentionClock, wall_ms
from monitor.collector import STOP_WAIT_S, Collector, Retention, log_cycle
from monitor.config import AlertSettings, HealthStageSettings, MetricsSettings, Settings
from monitor.exporter import MetricsExporter
from monitor.health import HealthEngine, HealthStage
from monitor.kafka import KafkaSampler, RecordTimestampReader
from monitor.logs import get_logger
from monitor.models import ConfigError, Filter
from monitor.offsets_topic.history import CommitRow
from monitor.pacing import GarbagePacer
from monitor.ports import Background
from monitor.roster import Roster
from monitor.shard import KafkaShard, Shard, compute_other_layouts, wait_for_partitions
from monitor.share_tail import ShareStateTail, build_share_tail
from monitor.stopping import run_parts
from monitor.store import RetentionPolicy, Store, make_engine, read_shards, safe_url, store_errors, upgrade_apart
from monitor.tail import OffsetsTail, build_offsets_tail
from monitor.version import lagmon_version

log = get_logger("collector")
PROGRESS_EVERY_S = 5.0  # how often `--once` says how far its tails have read
FIRST_PARTITIONS_WAIT_S = 30.0  # a coordinated collector's first cycle waits this long for its partitions


@dataclass(frozen=True)
class CollectOptions:
    """What `collect` was told beyond the settings (its flags already won over LAGMON_*)."""

    interval_s: float
    shard: Shard
    metrics_port: int | None
    metrics_address: str
    once: bool = False
    tail_wait_s: float = 60.0  # with `once`: how long the tails may take to read to their end
    restarts: int = 0  # workers of the supervisor that died before this one
    last_exit: str | None = None  # how the last of them ended


@dataclass(frozen=True)
class CollectorProcess:
    """The built collector: the loop, and the background parts in the order they start."""

    collector: Collector
    parts: tuple[Background, ...]
    health: HealthStage
    sender: OutboxSender
    options: CollectOptions
    sampler: KafkaSampler  # the collector's, as the wiring knows it
    share_tail: ShareStateTail | None = None  # the collector's tail is collector.tail
    member: Background | None = None  # a coordinated collector's member of the collectors' group


def build_collector(settings: Settings, options: CollectOptions, kafka_config: dict[str, str]) -> CollectorProcess:
    """Every part of the collector, wired; the store is migrated first and the start-up is logged."""
    cluster, groups = settings.kafka.cluster_name, settings.collector
    shard = KafkaShard(collector_name()) if options.shard.coordinated else options.shard
    engine = make_engine(settings.store.database_url)
    with store_errors("cannot open the store"):
        upgrade_apart(engine)
    # a write waits for a lock held elsewhere at most half an interval: the cycle is kept, the next one comes on time
    store = Store(engine, shard, busy_timeout_ms=int(min(10.0, max(0.5, options.interval_s / 2)) * 1000))
    if options.restarts:
        _record_restart(store, cluster, options)
    _warn_other_layouts(store, cluster, shard, options.interval_s)
    retention_now = RetentionClock()
    rules, alerts, sender = _alerting(store, cluster, options, retention_now)
    health = _health(store, cluster, kafka_config, shard, rules)
    tail = build_offsets_tail(
        kafka_config,
        store,
        cluster,
        mode=settings.tail.mode,
        span_s=settings.tail.span_s,
        on_commits=_wanted_commits(health.engine.record_commits, groups.topic_filter),
        counts_commits=lambda group, topic: groups.group_filter.wants(group) and groups.topic_filter.wants(topic),
    )
    share_tail = None if tail is None else build_share_tail(kafka_config)
    # Every group is listed (one cheap call); only this shard's are described, fetched and stored.
    sampler = KafkaSampler(
        kafka_config,
        cluster,
        lambda g: groups.group_filter.wants(g) and shard.owns(g),
        timeout_s=min(10.0, max(options.interval_s, 2.0)),
        offsets_tail=tail,
        wants_topic=None if groups.topic_filter.unfiltered else groups.topic_filter.wants,
        share_tail=share_tail,
        # a burst of commits (100,000 every 5 s) takes the tail more than a second: wait up to half an interval
        tail_wait_s=max(1.0, options.interval_s / 2),
    )
    member = None
    if isinstance(shard, KafkaShard):
        from monitor.kafka.membership import CollectorsGroupMember

        group = groups.collectors_group or f"lagmon-collectors-{cluster}"
        member = CollectorsGroupMember(kafka_config, group, shard, positions=tail.positions if tail else dict)
    exporter = None
    if options.metrics_port is not None:
        exporter = _serve_metrics(options, cluster, shard if isinstance(shard, KafkaShard) else None)
    roster = Roster(engine, cluster, shard, tail, exporter) if isinstance(shard, KafkaShard) else None
    observers = [alerts, roster, exporter, None if options.once else GarbagePacer()]  # the pacer last: in the cycle
    collector = Collector(
        sampler,
        store,
        cluster,
        tail=tail,
        health=health,
        observers=[o for o in observers if o is not None],
        backlog_bytes=settings.store.backlog_mb << 20,
        now_ms=CycleClock(),
        carry_from_store=not options.once,  # one answer is all `--once` gets: it takes it as it is
    )
    parts: list[Background | None] = [member, tail, share_tail, exporter]  # `--once` reads the tails, then samples
    if not options.once:
        retention = None
        if isinstance(shard, KafkaShard):  # once per cluster: by the holder of partition 0, whoever that is now
            retention = Retention(engine, cluster, RetentionPolicy(), retention_now, leads=lambda: shard.leads)
        elif shard.leads:
            retention = Retention(engine, cluster, RetentionPolicy(), retention_now)
        # The tail after the first cycle: that one reads offsets with OffsetFetch anyway (a new tail has not
        # read to the end), and a tail decoding the whole topic meanwhile would take half the interpreter from
        # it (a restart's first cycle, 20,000 group-partitions: 2.2 s, 1.1 s without).
        tail_part = AfterFirstCycle(collector, tail) if tail else None
        parts = [member, retention, tail_part, share_tail, exporter, sender]
    log.info(
        "lagmon %s collector: cluster %r at %s, %s, every %gs, into %s; offsets-topic tail %s",
        lagmon_version(),
        cluster,
        kafka_config["bootstrap.servers"],
        _describe_groups(groups, shard),
        options.interval_s,
        safe_url(settings.store.database_url),
        "on" if tail else "off",
    )
    return CollectorProcess(
        collector, tuple(p for p in parts if p is not None), health, sender, options, sampler, share_tail, member
    )


def run_collector(process: CollectorProcess, stop: threading.Event) -> int:
    """Run the built collector until `stop` (or its one cycle); its exit code."""
    if process.options.once:
        return run_parts(process.parts, stop, lambda: _one_cycle(process, stop), STOP_WAIT_S)

    def cycles() -> None:
        _wait_for_partitions(process, stop)
        process.collector.run(process.options.interval_s, stop)

    try:
        run_parts(process.parts, stop, cycles, STOP_WAIT_S)
    finally:
        process.health.save()
    log.info("collector stopped")
    return 0


def _wait_for_partitions(process: CollectorProcess, stop: threading.Event) -> None:
    shard = process.collector.store.shard
    if isinstance(shard, KafkaShard) and not wait_for_partitions(shard, stop, FIRST_PARTITIONS_WAIT_S):
        log.warning(
            "no partitions from the collectors' group within %gs (more collectors than partitions, or Kafka "
            "unreachable): cycling with no groups until Kafka assigns some",
            FIRST_PARTITIONS_WAIT_S,
        )


def collector_name() -> str:
    """How a coordinated collector is known among the others: host and process."""
    return f"{socket.gethostname()}-{os.getpid()}"


def _one_cycle(process: CollectorProcess, stop: threading.Event) -> int:
    _wait_for_partitions(process, stop)
    if process.collector.tail is not None:
        read_tails_to_end(
            process.collector.tail, process.share_tail, process.options.tail_wait_s, process.sampler.unreachable
        )
    result = process.collector.poll_once()
    log_cycle(result)
    process.health.save()
    process.sender.drain_once()  # what this cycle queued goes out now (failures wait for the next start)
    process.sender.repost_once()  # and an Alertmanager keeps the firing alerts (a --once run from cron)
    return 0 if result.ok else 1


def read_tails_to_end(
    tail: OffsetsTail,
    share_tail: ShareStateTail | None,
    within_s: float,
    unreachable: Callable[[], bool] = lambda: False,
) -> bool:
    """Wait until the running tails have read to their end (or turned off), saying how far they are
    every PROGRESS_EVERY_S; False, and a warning, when `within_s` passed first or a tail cannot read
    (Kafka refused it: the tail said why, and the cycle will say it too); False at once when librdkafka
    says no broker can be reached (`unreachable`: the sampler's), which the cycle says without waiting."""
    started = time.monotonic()
    said = started

    def done() -> bool:
        share_done = share_tail is None or share_tail.caught_up or share_tail.disabled
        return (tail.caught_up_at is not None or tail.disabled) and share_done

    while not done():
        now = time.monotonic()
        if unreachable():
            return False
        if tail.failing or (share_tail is not None and share_tail.failing):
            log.warning("the offsets-topic tails cannot read (see above): this cycle has no share or streams groups")
            return False
        if now - said >= PROGRESS_EVERY_S:
            said = now
            log.info(
                "reading the tails to their end for share and streams groups: %s in %.0fs (at most %gs)",
                _records_read(tail, share_tail),
                now - started,
                within_s,
            )
        if now - started >= within_s:
            log.warning(
                "the offsets-topic tails did not read to their end within %gs (--tail-wait; %s read): this cycle "
                "has no share or streams groups",
                within_s,
                _records_read(tail, share_tail),
            )
            return False
        time.sleep(0.1)
    return True


def _records_read(tail: OffsetsTail, share_tail: ShareStateTail | None) -> str:
    share = f", __share_group_state {share_tail.records_read:,} records" if share_tail is not None else ""
    return f"__consumer_offsets {tail.records_read:,} records{share}"


class AfterFirstCycle:
    """A part started once the collector's first cycle is done (never, if `stop` comes first).

    Its starter thread joins it, so it is stopped and joined with the others.
    """

    def __init__(self, collector: Collector, part: Background):
        self.collector = collector
        self.part = part

    def start(self, stop: threading.Event) -> threading.Thread:
        def wait_then_run() -> None:
            while not self.collector.cycled.wait(0.2):
                if stop.is_set():
                    return
            if not stop.is_set():
                self.part.start(stop).join()

        thread = threading.Thread(target=wait_then_run, name="after-first-cycle", daemon=True)
        thread.start()
        return thread


def _alerting(store: Store, cluster: str, options: CollectOptions, retention_now: RetentionClock):
    """(the rules, the alert engine that observes each cycle, its outbox sender); a broken rules file or
    channel is a ConfigError here, at the start."""
    settings = AlertSettings.from_env()
    rules, dashboard_url = load_alerting(settings)
    sender = OutboxSender(
        store.engine,
        cluster,
        rules.channels,
        shard=store.shard,
        dashboard_url=dashboard_url,
        resend_s=settings.alertmanager_resend_s,
    )
    restart = WorkerRestart(wall_ms(), options.restarts, options.last_exit or "died") if options.restarts else None
    alerts = AlertEngine(
        store.engine,
        cluster,
        rules,
        dashboard_url=dashboard_url,
        sender=sender,
        shard=store.shard,
        retention_now=retention_now,
        restart=restart,
    )
    channels = ", ".join(rules.channels) or "no channels (set LAGMON_CHANNELS)"
    get_logger("alerts").info("%d alert rules from %s; sending to %s", len(rules.rules), rules.source, channels)
    return rules, alerts, sender


def _record_restart(store: Store, cluster: str, options: CollectOptions) -> None:
    """A failed sample row says, on the Health page and to `healthcheck`, why a cycle was lost."""
    reason = f"the collector's worker {options.last_exit or 'died'} and was started again (restart {options.restarts})"
    try:
        store.write_sample_error(cluster, wall_ms(), 0, [reason])
    except Exception as e:  # the store may be why it died: the first cycle says so
        log.warning("restart not recorded in the store: %s: %s", type(e).__name__, e)


def _warn_other_layouts(store: Store, cluster: str, shard: Shard, interval_s: float) -> None:
    """Collectors of this cluster with another shard count, still running, would leave groups twice or never sampled."""
    recent = [r.shard for r in read_shards(store.engine, cluster) if wall_ms() - r.last_sample_at < 3000 * interval_s]
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


def _health(store: Store, cluster: str, kafka_config: dict[str, str], shard: Shard, rules) -> HealthStage:
    """The health step: the engine (exact lag seconds for the worst partitions) and its store edges."""
    exact_top = HealthStageSettings.from_env().exact_top
    reader = RecordTimestampReader(kafka_config) if exact_top else None
    judge = HealthEngine(cluster, rules.evaluator, exact_reader=reader, exact_top=exact_top)
    return HealthStage(store.engine, judge, shard)


def _serve_metrics(options: CollectOptions, cluster: str, shard: KafkaShard | None) -> MetricsExporter:
    """Prometheus /metrics from each cycle's snapshot and health report; the port is taken now."""
    granularity, address, port = MetricsSettings.from_env().granularity, options.metrics_address, options.metrics_port
    exporter = MetricsExporter(cluster, granularity, shard=shard)
    try:
        exporter.bind(port, address)
    except OSError as e:
        raise ConfigError(f"cannot serve metrics on {address}:{port}: {e.strerror}") from e
    exporter.count_restarts(options.restarts)
    log.info("metrics: http://%s:%s/metrics (%s granularity)", address, port, granularity)
    return exporter


def _wanted_commits(record_commits, topics: Filter):
    """The tail's exact commits for the health engine, less those of topics left out (LAGMON_TOPIC_ALLOW/DENY)."""
    if topics.unfiltered:
        return record_commits

    def record(commits: list[CommitRow]) -> None:
        record_commits([c for c in commits if topics.wants(c.topic)])

    return record


def _describe_groups(groups, shard: Shard) -> str:
    text = _matching("groups", groups.group_filter) or "all groups"
    if not groups.topic_filter.unfiltered:
        text += ", " + _matching("topics", groups.topic_filter)
    if isinstance(shard, KafkaShard):
        text += " of the __consumer_offsets partitions Kafka assigns this collector"
    elif shard.sharded:
        text += f" in shard {shard} (crc32 of the group id)"
    return text


def _matching(what: str, names: Filter) -> str:
    """A Filter in words for the start-up line; empty when it lets everything through."""
    if names.unfiltered:
        return ""
    text = f"{what} matching {getattr(names.allow, 'pattern', '.*')!r}"
    return text + (f" except {names.deny.pattern!r}" if names.deny else "")
