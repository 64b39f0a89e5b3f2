"""A share group's archived records move with the group: to the collector that takes it over, and
across a restart after a crash.

The health engine learns that records were given up on (archived) from a rise of the archived count
between two samples; the share_redelivery alert holds while the last rise is recent. A collector that
takes the group over, or restarts without a saved state for its last minute, replays the stored
share-partition samples instead of starting from a baseline: the alert stays open (neither resolved
early nor sent twice) and the rise keeps its time.
"""

from __future__ import annotations

import logging

from factories import T0, make_share_group, make_snapshot

from monitor.alerts.engine import AlertEngine
from monitor.alerts.rules import parse_rules
from monitor.collector import Collector
from monitor.health import HealthEngine, HealthStage
from monitor.models import PartitionOffsets, SharePartition, TopicPartition
from monitor.shard import UNSHARDED, KafkaShard, coordinator_partition
from monitor.store import Store
from monitor.store.alerts import read_alerts, read_outbox

PARTITIONS = 12
GROUP = "jobs-share"
TP = TopicPartition("jobs", 0)
RULES = parse_rules(
    "rules:\n  - {name: given-up, kind: share_redelivery, within: 60s, channels: [hook]}\n",
    "rules.yaml",
    {"hook": "json://127.0.0.1:9/hook"},
)


class ShareSampler:
    """The share group, with `archived` records given up on, to whichever shard owns it."""

    def __init__(self, shard):
        self.shard, self.archived, self.now = shard, 4, T0

    def fetch_snapshot(self, now_ms):
        share = {TP: SharePartition(40, 25, archived=self.archived)}
        groups = [make_share_group(GROUP, share=share)] if self.shard.owns(GROUP) else []
        return make_snapshot(self.now, groups=groups, partitions={TP: PartitionOffsets(0, 100)})


def collector(db_engine, shard, sampler: ShareSampler) -> Collector:
    health = HealthStage(db_engine, HealthEngine("c1", RULES.evaluator), shard)
    alerts = AlertEngine(db_engine, "c1", RULES, shard=shard, now_ms=lambda: sampler.now)
    store = Store(db_engine, shard)
    return Collector(sampler, store, "c1", now_ms=lambda: sampler.now, health=health, observers=[alerts])


def test_the_collector_taking_a_share_group_over_keeps_its_archived_rise_and_alert(db_engine, caplog):
    caplog.set_level(logging.INFO, logger="lagmon.alert-states")
    moving = coordinator_partition(GROUP, PARTITIONS)
    a, b = KafkaShard("a"), KafkaShard("b")
    a.hold({moving}, PARTITIONS, now_ms=T0)
    b.hold({(moving + 1) % PARTITIONS}, PARTITIONS, now_ms=T0)
    on_a, on_b = ShareSampler(a), ShareSampler(b)
    first, second = collector(db_engine, a, on_a), collector(db_engine, b, on_b)

    def cycle(at_s: int, archived: int) -> None:
        for sampler, c in ((on_a, first), (on_b, second)):
            sampler.now, sampler.archived = T0 + at_s * 1000, archived
            c.poll_once()

    cycle(0, 4)  # records archived before lagmon looked: no news
    cycle(10, 7)  # three given up on: the alert fires
    [fired] = read_alerts(db_engine, "c1")
    a.release({moving}, wait_s=0)
    b.hold({moving}, PARTITIONS, now_ms=T0 + 15_000)
    cycle(20, 7)  # b's first cycle with the group: the rise 10 s ago still holds the alert
    cycle(40, 7)
    assert states(db_engine) == [(fired.id, "firing")] and len(read_outbox(db_engine, cluster="c1")) == 1
    cycle(75, 7)  # over a minute after the rise, nothing new given up on: b resolves it, once
    assert states(db_engine) == [(fired.id, "resolved")]
    said = [r.getMessage().split(":")[0] for r in caplog.records if r.name == "lagmon.alert-states"]
    assert said == [f"given-up {state} on {GROUP}" for state in ("firing", "resolved")], said


def test_a_collector_restarted_after_a_crash_keeps_the_time_of_a_rise_it_saw_after_its_last_save(db_engine):
    sampler = ShareSampler(UNSHARDED)
    before = collector(db_engine, UNSHARDED, sampler)
    for at_s, archived in ((0, 4), (10, 7)):  # the health state is saved at the first cycle, not after
        sampler.now, sampler.archived = T0 + at_s * 1000, archived
        before.poll_once()
    [fired] = read_alerts(db_engine, "c1")
    after = collector(db_engine, UNSHARDED, sampler)  # the crash: nothing saved since the first cycle
    for at_s in (20, 75):
        sampler.now = T0 + at_s * 1000
        after.poll_once()
    assert states(db_engine) == [(fired.id, "resolved")]  # a minute after the rise at 10 s, not at 20 s
    assert len(read_outbox(db_engine, cluster="c1")) == 2  # fired, resolved


def states(db_engine) -> list[tuple[int, str]]:
    return [(x.id, x.state) for x in read_alerts(db_engine, "c1", resolved_since=T0)]
