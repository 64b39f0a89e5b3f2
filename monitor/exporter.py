"""Prometheus /metrics from what the collector already gathered: a scrape never calls Kafka.

Metric names and labels are kafka-lag-exporter's (DESIGN.md section 5), so the
Grafana dashboards and alert rules people already have keep working; lagmon's
own metrics are prefixed `lagmon_`. The collector hands every cycle to
`MetricsExporter.observe`; a scrape turns the newest snapshot into metric
families with the pure `compute_metric_families`.
"""
from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from prometheus_client import start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import CollectorRegistry

from monitor.models import ClusterSnapshot, GroupSnapshot, Rebalance, Status, TopicPartition

PARTITION_LABELS = ["cluster_name", "group", "topic", "partition", "member_host", "consumer_id", "client_id"]


@dataclass
class ExporterState:
    """Everything a scrape shows: the newest good snapshot and counts since the collector started."""

    cluster: str
    snapshot: ClusterSnapshot | None = None
    lag_seconds: Mapping[tuple[str, TopicPartition], float] = field(default_factory=dict)
    statuses: Mapping[str, Status] = field(default_factory=dict)  # group id -> health (evaluator roll-up)
    rebalances: Counter = field(default_factory=Counter)  # group id -> completed rebalances
    cycles: Counter = field(default_factory=Counter)  # "ok" / "failed" -> cycles
    last_success_s: float | None = None
    last_cycle_ms: int | None = None


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
    poll = GaugeMetricFamily("kafka_consumergroup_poll_time_ms", "Duration of the newest collector cycle",
                             labels=["cluster_name"])
    rebalances = CounterMetricFamily("lagmon_consumergroup_rebalances", "Rebalances completed since the start",
                                     labels=["cluster_name", "group"])
    status = GaugeMetricFamily("lagmon_consumergroup_status",
                               "Group health: " + ", ".join(f"{s.value} {s.name}" for s in Status),
                               labels=["cluster_name", "group"])
    cycles = CounterMetricFamily("lagmon_collector_cycles", "Collector cycles by outcome",
                                 labels=["cluster_name", "outcome"])
    success = GaugeMetricFamily("lagmon_collector_last_success_timestamp_seconds",
                                "When the newest successful cycle was taken", labels=["cluster_name"])

    snapshot = state.snapshot
    if snapshot is not None:
        for tp, offsets in sorted(snapshot.partitions.items()):
            latest.add_metric([cluster, tp.topic, str(tp.partition)], offsets.log_end)
            earliest.add_metric([cluster, tp.topic, str(tp.partition)], offsets.log_start)
        for group_id, group in sorted(snapshot.groups.items()):
            owners = _owners(group)
            lags: list[int] = []
            seconds: list[float] = []
            per_topic: Counter = Counter()
            for tp, committed in sorted(group.committed.items()):
                ends = snapshot.partitions.get(tp)
                if committed is None or ends is None:
                    continue
                labels = [cluster, group_id, tp.topic, str(tp.partition), *owners.get(tp, ("", "", ""))]
                value = max(0, ends.log_end - committed)
                offset.add_metric(labels, committed)
                lag.add_metric(labels, value)
                lags.append(value)
                per_topic[tp.topic] += value
                if (group_id, tp) in state.lag_seconds:
                    seconds.append(state.lag_seconds[(group_id, tp)])
                    lag_s.add_metric(labels, seconds[-1])
            if not lags:
                continue
            simple = "true" if not group.members else "false"
            max_lag.add_metric([cluster, group_id, simple], max(lags))
            if seconds:
                max_lag_s.add_metric([cluster, group_id, simple], max(seconds))
            sum_lag.add_metric([cluster, group_id], sum(lags))
            for topic, total in sorted(per_topic.items()):
                topic_sum.add_metric([cluster, group_id, topic], total)
    for group_id, health in sorted(state.statuses.items()):
        status.add_metric([cluster, group_id], int(health))
    for group_id, n in sorted(state.rebalances.items()):
        rebalances.add_metric([cluster, group_id], n)
    for outcome, n in sorted(state.cycles.items()):
        cycles.add_metric([cluster, outcome], n)
    if state.last_cycle_ms is not None:
        poll.add_metric([cluster], state.last_cycle_ms)
    if state.last_success_s is not None:
        success.add_metric([cluster], state.last_success_s)
    return [offset, lag, lag_s, max_lag, max_lag_s, sum_lag, topic_sum, latest, earliest, poll, rebalances,
            status, cycles, success]


class MetricsExporter:
    """The collector's side: observe each cycle; Prometheus's side: collect on scrape.

    `health`, when given, is the alert engine: after it ran in the same cycle, its
    `lag_seconds` and `group_statuses` are this cycle's, so the exporter computes nothing.
    """

    def __init__(self, cluster: str, health=None):
        self._state = ExporterState(cluster)
        self._lock = threading.Lock()
        self.health = health

    def __call__(self, result, snapshot: ClusterSnapshot | None) -> None:
        """A collector observer (after the alert engine in the list)."""
        lag_s, statuses = {}, {}
        if self.health is not None:
            lag_s = {k: v.seconds for k, v in self.health.lag_seconds.items() if v is not None}
            statuses = {g: overall for g, (overall, _worst) in self.health.group_statuses.items()}
        self.observe(snapshot, result.duration_ms, result.rebalances_completed, lag_s, statuses)

    def observe(self, snapshot: ClusterSnapshot | None, duration_ms: int, completed: Iterable[Rebalance] = (),
                lag_seconds: Mapping[tuple[str, TopicPartition], float] | None = None,
                statuses: Mapping[str, Status] | None = None) -> None:
        with self._lock:
            state = self._state
            state.last_cycle_ms = duration_ms
            state.cycles["ok" if snapshot is not None else "failed"] += 1
            if snapshot is not None:
                state.snapshot = snapshot
                state.last_success_s = snapshot.taken_at / 1000
                state.lag_seconds = dict(lag_seconds or {})
                state.statuses = dict(statuses or {})
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
