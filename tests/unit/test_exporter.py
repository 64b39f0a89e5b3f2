"""The exporter's exposition: kafka-lag-exporter's names and labels, values from the snapshot and the
health engine's report (run for real on the snapshots: the exporter computes nothing itself)."""

from __future__ import annotations

from dataclasses import replace

from prometheus_client.parser import text_string_to_metric_families

from monitor.exporter import MetricsExporter
from monitor.health import HealthEngine
from monitor.models import ClusterSnapshot, GroupSnapshot, GroupState, Member, PartitionOffsets, Rebalance, Status
from monitor.models import TopicPartition as TP


def scrape(exporter: MetricsExporter) -> dict[tuple[str, tuple], float]:
    """The exposition as Prometheus's own parser reads it (so it is valid text format, too)."""
    text = "".join(exporter.exposition())
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def snapshot() -> ClusterSnapshot:
    live = GroupSnapshot(
        "orders",
        GroupState.STABLE,
        members=(Member("m-1", "client-1", "/10.0.0.1", assignment=(TP("t", 0), TP("t", 1))),),
        committed={TP("t", 0): 90, TP("t", 1): 40},
    )
    simple = GroupSnapshot("batch", GroupState.EMPTY, committed={TP("t", 0): 100, TP("u", 0): None})
    parts = {
        TP("t", 0): PartitionOffsets(5, 100),
        TP("t", 1): PartitionOffsets(0, 50),
        TP("u", 0): PartitionOffsets(0, 7),
    }
    return ClusterSnapshot("prod", 1_700_000_000_000, {"orders": live, "batch": simple}, parts, duration_ms=230)


def judged(snap: ClusterSnapshot):
    """The health report of `snap`, after an earlier cycle 25 s before it saw t:0 at log end 90."""
    engine = HealthEngine("prod")
    earlier = {**snap.partitions, TP("t", 0): PartitionOffsets(5, 90)}
    engine.observe(replace(snap, taken_at=snap.taken_at - 25_000, partitions=earlier))
    return engine.observe(snap)


def labels(**kw) -> tuple:
    return tuple(sorted({"cluster_name": "prod", **kw}.items()))


def test_partition_lag_carries_the_owner_labels():
    exporter = MetricsExporter("prod")
    exporter.observe(snapshot(), judged(snapshot()), 230)
    got = scrape(exporter)
    owner = {"member_host": "/10.0.0.1", "consumer_id": "m-1", "client_id": "client-1"}
    assert got[("kafka_consumergroup_group_lag", labels(group="orders", topic="t", partition="0", **owner))] == 10
    assert got[("kafka_consumergroup_group_lag", labels(group="orders", topic="t", partition="1", **owner))] == 10
    assert got[("kafka_consumergroup_group_offset", labels(group="orders", topic="t", partition="1", **owner))] == 40
    # record 90 was appended when the log end reached 91, a tenth of the way from 90 (25 s ago) to 100 (now)
    assert (
        got[("kafka_consumergroup_group_lag_seconds", labels(group="orders", topic="t", partition="0", **owner))]
        == 22.5
    )
    # t:1 stood at log end 50 both times: its record 40 is older than the history, at least 25 s
    assert got[("kafka_consumergroup_group_max_lag_seconds", labels(group="orders", is_simple_consumer="false"))] == 25
    assert got[("lagmon_consumergroup_status", labels(group="orders"))] == Status.OK


def test_group_rollups_and_simple_consumers():
    exporter = MetricsExporter("prod")
    exporter.observe(snapshot(), HealthEngine("prod").observe(snapshot()), 230)
    got = scrape(exporter)
    assert got[("kafka_consumergroup_group_sum_lag", labels(group="orders"))] == 20
    assert got[("kafka_consumergroup_group_topic_sum_lag", labels(group="orders", topic="t"))] == 20
    assert got[("kafka_consumergroup_group_max_lag", labels(group="orders", is_simple_consumer="false"))] == 10
    # batch: caught up on t:0, nothing committed on u:0 -> no lag series for u:0 rather than a made-up value
    assert got[("kafka_consumergroup_group_max_lag", labels(group="batch", is_simple_consumer="true"))] == 0
    assert not any(name == "kafka_consumergroup_group_lag" and ("topic", "u") in key for name, key in got)
    # one cycle is no history to interpolate: only the caught-up partition has a lag in seconds (0)
    assert {key: v for (name, key), v in got.items() if name == "kafka_consumergroup_group_lag_seconds"} == {
        labels(group="batch", topic="t", partition="0", member_host="", consumer_id="", client_id=""): 0.0
    }


def test_partition_offsets_poll_time_and_collector_health():
    exporter = MetricsExporter("prod")
    exporter.observe(snapshot(), judged(snapshot()), 260, 230, completed=[Rebalance("orders", 1, 2, "eager")] * 2)
    got = scrape(exporter)
    assert got[("kafka_consumergroup_poll_time_ms", labels())] == 230  # the sampling part
    assert got[("lagmon_collector_cycle_seconds", labels(part="whole"))] == 0.26
    assert got[("lagmon_collector_cycle_seconds", labels(part="sampling"))] == 0.23
    exporter.observe(None, None, 5000, 5000)
    got = scrape(exporter)
    assert got[("kafka_partition_latest_offset", labels(topic="t", partition="0"))] == 100
    assert got[("kafka_partition_earliest_offset", labels(topic="t", partition="0"))] == 5
    assert got[("kafka_consumergroup_poll_time_ms", labels())] == 5000  # the newest cycle, failed or not
    assert got[("lagmon_collector_cycle_seconds", labels(part="whole"))] == 5
    assert got[("lagmon_consumergroup_rebalances_total", labels(group="orders"))] == 2
    assert got[("lagmon_collector_cycles_total", labels(outcome="ok"))] == 1
    assert got[("lagmon_collector_cycles_total", labels(outcome="failed"))] == 1
    assert got[("lagmon_collector_last_success_timestamp_seconds", labels())] == 1_700_000_000
    assert got[("lagmon_collector_offsets_from_tail", labels())] == 0  # that cycle asked OffsetFetch
    # the failed cycle kept the last good snapshot's lag
    assert got[("kafka_consumergroup_group_sum_lag", labels(group="orders"))] == 20


def test_where_the_committed_offsets_came_from_follows_the_newest_good_cycle():
    exporter = MetricsExporter("prod")
    exporter.observe(snapshot(), judged(snapshot()), 260, 230, from_tail=True)
    assert scrape(exporter)[("lagmon_collector_offsets_from_tail", labels())] == 1
    exporter.observe(None, None, 5000, 5000)  # a failed cycle read nothing: the last good one still counts
    assert scrape(exporter)[("lagmon_collector_offsets_from_tail", labels())] == 1


def test_before_the_first_cycle_only_the_names_are_there():
    got = scrape(MetricsExporter("prod"))
    assert got == {}


def test_label_values_are_escaped():
    snap = snapshot()
    odd = GroupSnapshot('a "quoted" \\ group\nname', GroupState.EMPTY, committed={TP("t", 0): 90})
    snap = replace(snap, groups={**snap.groups, odd.group_id: odd})
    exporter = MetricsExporter("prod")
    exporter.observe(snap, HealthEngine("prod").observe(snap), 230)
    assert scrape(exporter)[("kafka_consumergroup_group_sum_lag", labels(group=odd.group_id))] == 10
