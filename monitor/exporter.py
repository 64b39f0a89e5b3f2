"""Prometheus /metrics from what the collector already gathered: a scrape never calls Kafka.

Metric names and labels are kafka-lag-exporter's (DESIGN.md section 5), so the
Grafana dashboards and alert rules people already have keep working; lagmon's
own metrics are prefixed `lagmon_`. The collector hands every cycle to
`MetricsExporter.observe` with its snapshot and health report (monitor.health):
lag, lag seconds and status are the health engine's, not computed again. A
scrape turns the newest ones into metric families with the pure
`compute_metric_families`.
"""
from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from prometheus_client import start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import CollectorRegistry

from monitor.health.report import HealthReport
from monitor.models import ClusterSnapshot, GroupSnapshot, Rebalance, Status, TopicPartition

PARTITION_LABELS = ["cluster_name", "group", "topic", "partition", "member_host", "consumer_id", "client_id"]


@dataclass
class ExporterState:
    """Everything a scrape shows: the newest good snapshot and counts since the collector started."""

    cluster: str
    snapshot: ClusterSnapshot | None = None
    health: HealthReport | None = None  # of the same cycle as `snapshot`
    rebalances: Counter = field(default_factory=Counter)  # group id -> completed rebalances
    cycles: Counter = field(default_factory=Counter)  # "ok" / "failed" -> cycles
    last_success_s: float | None = None
    last_sampling_ms: int | None = None  # the Kafka part of the newest cycle
    last_cycle_ms: int | None = None  # the whole newest cycle, up to the exporter (which only keeps references)


def _owners(group: GroupSnapshot) -> dict[TopicPartition, tuple[str, str, str]]:
    return {tp: (m.host, m.member_id, m.client_id) for m in group.members for tp in m.assignment}


def compute_metric_families(state: ExporterState) -> list:
    """The whole exposition for one scrape, from plain data."""
    cluster = state.cluster
    offset = GaugeMetricFamily("kafka_consumergroup_group_offset", "Last committed offset of a group's partition",
                               labels=PARTITION_LABELS)
    lag = GaugeMetricFamily("kafka_consumergroup_group_lag", "Log end minus committed offset, in offsets",
                            labels=PARTITION_LABELS)
    lag_s = GaugeMetricFamily("kafka_consumergroup_group_lag_seconds", "Estimated lag in seconds",
                              labels=PARTITION_LABELS)
    max_lag = GaugeMetricFamily("kafka_consumergroup_group_max_lag", "Highest partition lag of a group, in offsets",
                                labels=["cluster_name", "group", "is_simple_consumer"])
    max_lag_s = GaugeMetricFamily("kafka_consumergroup_group_max_lag_seconds",
                                  "Highest partition lag of a group, in seconds",
                                  labels=["cluster_name", "group", "is_simple_consumer"])
    sum_lag = GaugeMetricFamily("kafka_consumergroup_group_sum_lag", "Total lag of a group, in offsets",
                                labels=["cluster_name", "group"])
    topic_sum = GaugeMetricFamily("kafka_consumergroup_group_topic_sum_lag", "Total lag of a group on one topic",
                                  labels=["cluster_name", "group", "topic"])
    latest = GaugeMetricFamily("kafka_partition_latest_offset", "Log end offset (high watermark)",
                               labels=["cluster_name", "topic", "partition"])
    earliest = GaugeMetricFamily("kafka_partition_earliest_offset", "Log start offset",
                                 labels=["cluster_name", "topic", "partition"])
    poll = GaugeMetricFamily("kafka_consumergroup_poll_time_ms", "Time the newest cycle spent sampling Kafka",
                             labels=["cluster_name"])
    cycle = GaugeMetricFamily("lagmon_collector_cycle_seconds", "Duration of the newest collector cycle, whole "
                              "(sampling, store, health, alerts) and its sampling part", labels=["cluster_name", "part"])
    rebalances = CounterMetricFamily("lagmon_consumergroup_rebalances", "Rebalances completed since the start",
                                     labels=["cluster_name", "group"])
    status = GaugeMetricFamily("lagmon_consumergroup_status",
                               "Group health: " + ", ".join(f"{s.value} {s.name}" for s in Status),
                               labels=["cluster_name", "group"])
    cycles = CounterMetricFamily("lagmon_collector_cycles", "Collector cycles by outcome",
                                 labels=["cluster_name", "outcome"])
    success = GaugeMetricFamily("lagmon_collector_last_success_timestamp_seconds",
                                "When the newest successful cycle was taken", labels=["cluster_name"])

    snapshot, health = state.snapshot, state.health
    if snapshot is not None:
        for tp, offsets in sorted(snapshot.partitions.items()):
            latest.add_metric([cluster, tp.topic, str(tp.partition)], offsets.log_end)
            earliest.add_metric([cluster, tp.topic, str(tp.partition)], offsets.log_start)
    if snapshot is not None and health is not None:
        for group_id, gh in sorted(health.groups.items()):
            group = snapshot.groups.get(group_id)
            owners = _owners(group) if group is not None else {}
            lags: list[int] = []
            seconds: list[float] = []
            per_topic: Counter = Counter()
            for p in sorted(gh.partitions, key=lambda p: p.tp):
                if p.lag is None:
                    continue
                labels = [cluster, group_id, p.tp.topic, str(p.tp.partition), *owners.get(p.tp, ("", "", ""))]
                offset.add_metric(labels, p.committed)
                lag.add_metric(labels, p.lag)
                lags.append(p.lag)
                per_topic[p.tp.topic] += p.lag
                lag_seconds = p.clock.at(health.at) if p.clock is not None else None
                if lag_seconds is not None:
                    seconds.append(lag_seconds.seconds)
                    lag_s.add_metric(labels, lag_seconds.seconds)
            status.add_metric([cluster, group_id], int(gh.status))
            if not lags:
                continue
            simple = "true" if group is None or not group.members else "false"
            max_lag.add_metric([cluster, group_id, simple], max(lags))
            if seconds:
                max_lag_s.add_metric([cluster, group_id, simple], max(seconds))
            sum_lag.add_metric([cluster, group_id], sum(lags))
            for topic, total in sorted(per_topic.items()):
                topic_sum.add_metric([cluster, group_id, topic], total)
    for group_id, n in sorted(state.rebalances.items()):
        rebalances.add_metric([cluster, group_id], n)
    for outcome, n in sorted(state.cycles.items()):
        cycles.add_metric([cluster, outcome], n)
    if state.last_sampling_ms is not None:
        poll.add_metric([cluster], state.last_sampling_ms)
        cycle.add_metric([cluster, "sampling"], state.last_sampling_ms / 1000)
    if state.last_cycle_ms is not None:
        cycle.add_metric([cluster, "whole"], state.last_cycle_ms / 1000)
    if state.last_success_s is not None:
        success.add_metric([cluster], state.last_success_s)
    return [offset, lag, lag_s, max_lag, max_lag_s, sum_lag, topic_sum, latest, earliest, poll, cycle, rebalances,
            status, cycles, success]


class MetricsExporter:
    """The collector's side: observe each cycle (last of its observers); Prometheus's side: collect on scrape."""

    def __init__(self, cluster: str):
        self._state = ExporterState(cluster)
        self._lock = threading.Lock()

    def __call__(self, result, snapshot: ClusterSnapshot | None, report: HealthReport | None) -> None:
        """A collector observer; `result.duration_ms` is the cycle so far, i.e. all of it but this call."""
        self.observe(snapshot, report, result.duration_ms, result.sampling_ms, result.rebalances_completed)

    def observe(self, snapshot: ClusterSnapshot | None, report: HealthReport | None, cycle_ms: int,
                sampling_ms: int | None = None, completed: Iterable[Rebalance] = ()) -> None:
        with self._lock:
            state = self._state
            state.last_cycle_ms = cycle_ms
            state.last_sampling_ms = sampling_ms
            state.cycles["ok" if snapshot is not None else "failed"] += 1
            if snapshot is not None:
                state.snapshot = snapshot
                state.health = report
                state.last_success_s = snapshot.taken_at / 1000
            for r in completed:
                state.rebalances[r.group_id] += 1

    def collect(self):
        with self._lock:
            families = compute_metric_families(self._state)
        yield from families

    def serve(self, port: int, address: str = "127.0.0.1"):
        """Serve /metrics on a thread of its own; returns the HTTP server (shutdown() stops it)."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)
        server, _thread = start_http_server(port, addr=address, registry=registry)
        return server
