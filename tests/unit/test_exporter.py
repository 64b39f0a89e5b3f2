"""The exporter's exposition: kafka-lag-exporter's names and labels, values from the snapshot and the
health engine's report (run for real on the snapshots: the exporter computes nothing itself)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from factories import SHARE_ON_T, make_group, make_share_group, make_snapshot, make_streams_group
from prometheus_client.parser import text_string_to_metric_families

from monitor.exporter import FORGET_AFTER_MS, MetricsExporter
from monitor.health import HealthEngine
from monitor.models import (
    ClusterSnapshot,
    GroupSnapshot,
    GroupState,
    Member,
    PartitionOffsets,
    Rebalance,
    SharePartition,
    Status,
)
from monitor.models import TopicPartition as TP
from monitor.shard import KafkaShard, coordinator_partition


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
    # record 90 was appended when the log end reached 91, a tenth of the way from 90 (25 s ago) to 100 (now),
    # each log end read 0.23 s after its cycle's time (the cycles' sampling time): 22.5 s less 0.23
    t0 = labels(group="orders", topic="t", partition="0", **owner)
    assert got[("kafka_consumergroup_group_lag_seconds", t0)] == 22.27
    # t:1 stood at log end 50 both times: its record 40 is older than the history, at least 25 s less 0.23
    orders = labels(group="orders", is_simple_consumer="false")
    assert got[("kafka_consumergroup_group_max_lag_seconds", orders)] == 24.77
    assert got[("lagmon_consumergroup_group_max_lag_seconds_error", orders)] == math.inf  # a lower bound
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


def test_before_the_first_cycle_only_the_names_the_build_and_the_collector_counts_are_there():
    got = scrape(MetricsExporter("prod", build={"version": "1.2.3", "python": "3.11.2"}))
    cluster = (("cluster_name", "prod"),)
    assert got == {
        ("lagmon_build_info", (("python", "3.11.2"), ("version", "1.2.3"))): 1,
        ("lagmon_collector_restarts_total", cluster): 0,
        ("lagmon_offsets_tail_records_skipped", cluster): 0,
        ("lagmon_store_write_errors_total", cluster): 0,
        ("lagmon_store_unstored_cycles", cluster): 0,
    }


def test_a_restarted_worker_and_a_store_outage_show():
    exporter = MetricsExporter("prod")
    exporter.count_restarts(2)
    snap = snapshot()
    exporter.observe(snap, HealthEngine("prod").observe(snap), 230, store_failed=True, unstored=1)
    exporter.observe(snap, HealthEngine("prod").observe(snap), 230, store_failed=True, unstored=2, tail_skipped=3)
    got = scrape(exporter)
    cluster = (("cluster_name", "prod"),)
    assert (
        got[("lagmon_collector_restarts_total", cluster)],
        got[("lagmon_store_write_errors_total", cluster)],
        got[("lagmon_store_unstored_cycles", cluster)],
        got[("lagmon_offsets_tail_records_skipped", cluster)],
    ) == (2, 2, 2, 3)


def test_build_info_names_this_lagmon_and_python():
    import platform

    from monitor.version import lagmon_version

    [(labels_, value)] = [(k[1], v) for k, v in scrape(MetricsExporter("prod")).items() if k[0] == "lagmon_build_info"]
    assert dict(labels_) == {"version": lagmon_version(), "python": platform.python_version()} and value == 1


def test_label_values_are_escaped():
    snap = snapshot()
    odd = GroupSnapshot('a "quoted" \\ group\nname', GroupState.EMPTY, committed={TP("t", 0): 90})
    snap = replace(snap, groups={**snap.groups, odd.group_id: odd})
    exporter = MetricsExporter("prod")
    exporter.observe(snap, HealthEngine("prod").observe(snap), 230)
    assert scrape(exporter)[("kafka_consumergroup_group_sum_lag", labels(group=odd.group_id))] == 10


PER_PARTITION = {
    "kafka_consumergroup_group_offset",
    "kafka_consumergroup_group_lag",
    "kafka_consumergroup_group_lag_seconds",
    "kafka_partition_latest_offset",
    "kafka_partition_earliest_offset",
}
SHARE_PER_PARTITION = {
    "lagmon_sharegroup_start_offset",
    "lagmon_sharegroup_records",
    "lagmon_sharegroup_max_delivery_count",
}
MEMBER_LABELS = {"member_host", "consumer_id", "client_id"}


def two_topics() -> ClusterSnapshot:
    """`orders` reads t (two partitions) and u (one); t:1 lags most."""
    snap = snapshot()
    orders = replace(
        snap.groups["orders"],
        members=(
            Member("m-1", "client-1", "/10.0.0.1", assignment=(TP("t", 0), TP("t", 1))),
            Member("m-2", "client-2", "/10.0.0.2", assignment=(TP("u", 0),)),
        ),
        committed={TP("t", 0): 90, TP("t", 1): 20, TP("u", 0): 5},
    )
    return replace(snap, groups={**snap.groups, "orders": orders})


def test_topic_granularity_serves_topics_and_groups_and_nothing_per_partition_or_member():
    snap = two_topics()
    exporter = MetricsExporter("prod", "topic")
    exporter.observe(snap, judged(snap), 230)
    got = scrape(exporter)
    assert {name for name, _ in got} & PER_PARTITION == set()
    assert all(MEMBER_LABELS.isdisjoint(dict(key)) and "partition" not in dict(key) for _, key in got)
    assert got[("kafka_consumergroup_group_topic_sum_lag", labels(group="orders", topic="t"))] == 40
    assert got[("lagmon_consumergroup_topic_max_lag", labels(group="orders", topic="t"))] == 30
    assert got[("lagmon_consumergroup_topic_max_lag", labels(group="orders", topic="u"))] == 2
    # t:0 is 22.27 s behind (see the first test); t:1 stood still for the whole 24.77 s of history
    assert got[("lagmon_consumergroup_topic_max_lag_seconds", labels(group="orders", topic="t"))] == 24.77
    assert got[("lagmon_consumergroup_topic_offset_sum", labels(group="orders", topic="t"))] == 110
    assert got[("lagmon_topic_latest_offset_sum", labels(topic="t"))] == 150
    assert got[("lagmon_topic_earliest_offset_sum", labels(topic="t"))] == 5
    # the group rollups are the same as with partition granularity
    assert got[("kafka_consumergroup_group_sum_lag", labels(group="orders"))] == 42
    assert got[("kafka_consumergroup_group_max_lag", labels(group="orders", is_simple_consumer="false"))] == 30
    assert got[("lagmon_consumergroup_status", labels(group="orders"))] == Status.OK


def test_partition_granularity_serves_the_topic_series_too():
    snap = two_topics()
    exporter = MetricsExporter("prod", "partition")
    exporter.observe(snap, judged(snap), 230)
    by_topic = MetricsExporter("prod", "topic")
    by_topic.observe(snap, judged(snap), 230)
    got, coarse = scrape(exporter), scrape(by_topic)
    assert {k: v for k, v in got.items() if k[0] not in PER_PARTITION} == coarse
    assert {name for name, _ in got} >= PER_PARTITION


def fleet(groups: int, topics: int, partitions: int, generation: int = 1) -> ClusterSnapshot:
    """`groups` groups, each with one member per topic holding all its partitions; member ids carry the generation."""
    tps = [TP(f"topic-{t}", p) for t in range(topics) for p in range(partitions)]
    return ClusterSnapshot(
        "prod",
        1_700_000_000_000,
        {
            f"g{g}": GroupSnapshot(
                f"g{g}",
                GroupState.STABLE,
                members=tuple(
                    Member(
                        f"consumer-{g}-{t}-gen{generation}",
                        f"client-{t}",
                        f"/10.0.{t}.{generation}",
                        assignment=tuple(tp for tp in tps if tp.topic == f"topic-{t}"),
                    )
                    for t in range(topics)
                ),
                committed=dict.fromkeys(tps, 5),
            )
            for g in range(groups)
        },
        {tp: PartitionOffsets(0, 10) for tp in tps},
    )


def series(snap: ClusterSnapshot, granularity: str) -> set[tuple[str, tuple]]:
    """The series of one scrape, after two cycles (so every partition has a lag in seconds)."""
    engine = HealthEngine("prod")
    earlier = {tp: PartitionOffsets(0, 6) for tp in snap.partitions}
    engine.observe(replace(snap, taken_at=snap.taken_at - 10_000, partitions=earlier))
    exporter = MetricsExporter("prod", granularity)
    exporter.observe(snap, engine.observe(snap), 100)
    return set(scrape(exporter))


def test_topic_granularity_bounds_the_series_count_and_a_rebalance_churns_none():
    small, large = fleet(5, 3, 4), fleet(5, 3, 40)
    counts = {g: (len(series(small, g)), len(series(large, g))) for g in ("partition", "topic")}
    # per group: sum, max, max seconds and its error, status, info; per group and topic: 4 rollups; per topic:
    # 2 log-offset sums; the collector's own: cycle time, cycles, last success, offsets from the tail, build info,
    # restarts, records the tail skipped, store write errors, cycles not stored yet
    per_topic = 5 * 6 + 5 * 3 * 4 + 3 * 2 + 9
    assert counts["topic"] == (per_topic, per_topic)  # ten times the partitions, the same series
    # partition granularity adds offset, lag and lag seconds per group-partition and two log offsets per partition
    assert counts["partition"] == (per_topic + 5 * 12 * 3 + 12 * 2, per_topic + 5 * 120 * 3 + 120 * 2)
    rebalanced = fleet(5, 3, 4, generation=2)  # every member replaced: new ids and hosts
    assert series(rebalanced, "topic") == series(small, "topic")
    assert series(rebalanced, "partition") != series(small, "partition")


def test_an_unknown_granularity_is_refused():
    with pytest.raises(ValueError, match="'group' is not one of partition, topic"):
        MetricsExporter("prod", "group")


@pytest.mark.parametrize("granularity", ["partition", "topic"])
def test_offset_commits_add_up_per_group_and_topic_failed_cycles_too(granularity):
    exporter = MetricsExporter("prod", granularity)
    exporter.observe(snapshot(), judged(snapshot()), 230, commits=[("orders", "t", 4), ("batch", "u", 1)])
    exporter.observe(None, None, 5000, commits=[("orders", "t", 2)])  # the tail reads on while Kafka sampling fails
    got = scrape(exporter)
    commits = {k: v for (name, k), v in got.items() if name == "lagmon_consumergroup_offset_commits_total"}
    assert commits == {labels(group="orders", topic="t"): 6, labels(group="batch", topic="u"): 1}


def test_a_gone_groups_counters_leave_an_hour_after_it_was_last_seen():
    exporter = MetricsExporter("prod")
    first = snapshot()
    done = Rebalance("batch", first.taken_at - 5000, first.taken_at, "eager")
    exporter.observe(first, None, 230, completed=[done], commits=[("batch", "u", 3), ("orders", "t", 1)])
    without_batch = replace(first, groups={"orders": first.groups["orders"]})

    def counted_groups(after_ms: int) -> set[str]:
        exporter.observe(replace(without_batch, taken_at=first.taken_at + after_ms), None, 230)
        got = scrape(exporter)
        names = ("lagmon_consumergroup_rebalances_total", "lagmon_consumergroup_offset_commits_total")
        return {dict(k)["group"] for (name, k) in got if name in names}

    assert counted_groups(FORGET_AFTER_MS - 1000) == {"batch", "orders"}
    assert counted_groups(FORGET_AFTER_MS) == {"orders"}  # still in every snapshot: kept


def kip_groups() -> ClusterSnapshot:
    """A share group (t:0 with records in flight, t:1 with none) and a streams group beside a classic one."""
    return make_snapshot(
        1_700_000_000_000,
        cluster="prod",
        groups=[make_group("orders"), make_share_group("jobs", share=SHARE_ON_T), make_streams_group("counts")],
    )


def test_every_group_says_its_type_and_state():
    snap = kip_groups()
    exporter = MetricsExporter("prod", "topic")
    exporter.observe(snap, judged(snap), 230)
    info = {dict(k)["group"]: dict(k) for name, k in scrape(exporter) if name == "lagmon_consumergroup_info"}
    assert {g: (labels_["type"], labels_["state"]) for g, labels_ in info.items()} == {
        "orders": ("classic", "Stable"),
        "jobs": ("share", "Stable"),
        "counts": ("streams", "Stable"),
    }


def test_a_share_groups_records_in_flight_per_partition_and_topic_and_its_lag_as_any_groups():
    snap = kip_groups()
    exporter = MetricsExporter("prod")
    exporter.observe(snap, judged(snap), 230)
    got = scrape(exporter)
    t0 = {"group": "jobs", "topic": "t", "partition": "0"}
    assert got[("lagmon_sharegroup_start_offset", labels(**t0))] == 80
    assert {
        s: got[("lagmon_sharegroup_records", labels(**t0, state=s))]
        for s in ("acknowledged", "archived", "redelivering")
    } == {"acknowledged": 5, "archived": 0, "redelivering": 3}
    assert got[("lagmon_sharegroup_max_delivery_count", labels(**t0))] == 2
    assert got[("lagmon_sharegroup_max_delivery_count", labels(group="jobs", topic="t", partition="1"))] == 0
    assert got[("lagmon_sharegroup_topic_records", labels(group="jobs", topic="t", state="redelivering"))] == 3
    assert got[("lagmon_sharegroup_topic_max_delivery_count", labels(group="jobs", topic="t"))] == 2
    assert got[("lagmon_sharegroup_archived_records_total", labels(group="jobs", topic="t"))] == 0
    # lag is log end - position (start offset + records done): Kafka's share lag; no member owns a share-partition
    nobody = {"member_host": "", "consumer_id": "", "client_id": ""}
    assert got[("kafka_consumergroup_group_lag", labels(**t0, **nobody))] == 100 - 85
    assert {dict(k)["group"] for name, k in got if name.startswith("lagmon_sharegroup")} == {"jobs"}


def test_a_streams_groups_tasks_by_kind_and_members():
    snap = kip_groups()
    exporter = MetricsExporter("prod", "topic")
    exporter.observe(snap, judged(snap), 230)
    got = scrape(exporter)
    assert {
        kind: got[("lagmon_streamsgroup_tasks", labels(group="counts", kind=kind))]
        for kind in ("active", "standby", "warmup")
    } == {"active": 4, "standby": 2, "warmup": 0}  # two instances, each active on two tasks and standby for one
    assert got[("lagmon_streamsgroup_members", labels(group="counts"))] == 2
    assert {dict(k)["group"] for name, k in got if name.startswith("lagmon_streamsgroup")} == {"counts"}


def test_topic_granularity_leaves_out_the_share_partitions_and_keeps_their_topic_series():
    snap = kip_groups()
    exporter = MetricsExporter("prod", "topic")
    exporter.observe(snap, judged(snap), 230)
    names = {name for name, _ in scrape(exporter)}
    assert names & SHARE_PER_PARTITION == set()
    assert {
        "lagmon_sharegroup_topic_records",
        "lagmon_sharegroup_topic_max_delivery_count",
        "lagmon_sharegroup_archived_records_total",
    } <= names


def test_records_a_share_group_gives_up_on_count_up_across_cycles():
    archived = [0, 2, 1, 4]  # the start offset passes one archived record between the second and third cycle
    engine, exporter = HealthEngine("prod"), MetricsExporter("prod")
    for i, n in enumerate(archived):
        share = {TP("t", 0): SharePartition(80, 0, archived=n), TP("t", 1): SharePartition(40, 0, archived=1)}
        snap = make_snapshot(1_700_000_000_000 + i * 10_000, groups=[make_share_group("jobs", share=share)])
        exporter.observe(snap, engine.observe(snap), 100)
    got = scrape(exporter)
    # t:0 rose by 2, then by 3 (its fall gave nothing up); t:1 held one archived record from the start
    assert got[("lagmon_sharegroup_archived_records_total", labels(group="jobs", topic="t"))] == 2 + 3


def test_a_coordinated_collector_drops_the_counters_of_groups_it_let_go():
    """The collector that took the group over counts its commits now: two series of one group would add up twice."""
    first = snapshot()
    shard = KafkaShard("a")
    shard.hold({coordinator_partition(g, 12) for g in first.groups}, 12, now_ms=0)
    exporter = MetricsExporter("prod", shard=shard)
    exporter.observe(first, None, 230, commits=[("batch", "u", 3), ("orders", "t", 1)])
    shard.release({coordinator_partition("batch", 12)} - {coordinator_partition("orders", 12)}, wait_s=0)
    without_batch = replace(first, groups={"orders": first.groups["orders"]}, taken_at=first.taken_at + 1000)
    exporter.observe(without_batch, None, 230)
    got = scrape(exporter)
    assert {dict(k)["group"] for (name, k) in got if name == "lagmon_consumergroup_offset_commits_total"} == {"orders"}
