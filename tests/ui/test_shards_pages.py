"""The dashboard over a database two collector shards write: every group shows, as from one collector; and
the Health page's list of coordinated collectors."""

from __future__ import annotations

import time

import pytest
from dashboard_seed import open_app
from factories import make_group, make_snapshot, owned_groups

from monitor.models import ClusterSnapshot, Member, PartitionOffsets, TopicPartition
from monitor.offsets_topic.history import TailUpdate
from monitor.shard import Shard
from monitor.store import Store, make_engine
from monitor.store.collectors import CollectorRow, write_collector
from monitor.store.offsets_tail import write_tail_update

ONE, TWO = Shard(1, 2), Shard(2, 2)
GROUPS = {shard: owned_groups(shard, 2, "svc") for shard in (ONE, TWO)}


def snapshot(at: int, groups: list[str], step: int) -> ClusterSnapshot:
    """Each group on its own topic, 100 * step committed and 10, 20, ... behind its log end."""
    out, parts = [], {}
    for i, gid in enumerate(groups):
        tp = TopicPartition(f"t-{gid}", 0)
        member = Member(f"m-{gid}", "client", "/10.0.0.1", assignment=(tp,))
        out.append(make_group(gid, committed={tp: 100 * step}, members=[member]))
        parts[tp] = PartitionOffsets(0, 100 * step + 10 * (i + 1))
    return make_snapshot(at, cluster="prod", groups=out, partitions=parts, duration_ms=0)


@pytest.fixture
def sharded_db(app_db_url):
    """The dashboard's database after two shards took turns for 5 minutes, and their tail positions."""
    engine = make_engine(app_db_url)
    now = int(time.time() * 1000)
    stores = {shard: Store(engine, shard) for shard in (ONE, TWO)}
    for step in range(30):  # two shards taking turns, 10 s apart
        for k, (shard, store) in enumerate(stores.items()):
            store.write_snapshot(snapshot(now - (30 - step) * 10_000 + k * 4_000, GROUPS[shard], step))
    for shard, store in stores.items():
        write_tail_update(store, "prod", TailUpdate(positions={0: 10 * shard.index}), now)
    engine.dispose()
    return app_db_url


def test_overview_shows_every_shards_groups_with_lag_and_trend(sharded_db):
    df = open_app(page="overview", range="1h").dataframe[0].value
    everyone = sorted(GROUPS[ONE] + GROUPS[TWO])
    assert sorted(df["group"]) == everyone
    lag = {gid: 10 * (i + 1) for groups in GROUPS.values() for i, gid in enumerate(groups)}
    assert dict(zip(df["group"], df["total lag"], strict=True)) == lag
    assert all(len(trend) == 20 and trend[-1] == lag[g] for g, trend in zip(df["group"], df["lag trend"], strict=True))


def test_health_page_shows_each_shards_newest_cycle_and_tail(sharded_db):
    at = open_app(page="health", range="1h")
    assert "Collector shards" in [h.value for h in at.subheader]
    shards, tail = at.dataframe[0].value, at.dataframe[1].value
    assert list(shards["shard"]) == ["1/2", "2/2"] and list(shards["ok"]) == [True, True]
    assert tail[["shard", "partition", "next offset"]].to_dict("records") == [
        {"shard": "1/2", "partition": 0, "next offset": 10},
        {"shard": "2/2", "partition": 0, "next offset": 20},
    ]


def test_health_page_shows_coordinated_collectors_and_one_that_stopped(app_db_url):
    engine = make_engine(app_db_url)
    now = int(time.time() * 1000)
    Store(engine).write_snapshot(snapshot(now - 1000, ["svc-a"], 1))
    write_collector(engine, "prod", CollectorRow("host-a-1", {0: now - 60_000, 1: now - 60_000, 5: now}, 7, 12, 0, now))
    write_collector(engine, "prod", CollectorRow("host-b-2", {}, 0, None, 0, now - 600_000))
    engine.dispose()
    at = open_app(page="health", range="1h")
    assert "Coordinated collectors" in [h.value for h in at.subheader]
    table = at.dataframe[0].value
    shown = table[["collector", "__consumer_offsets partitions", "groups", "tail lag (records)"]]
    assert shown.values.tolist() == [["host-a-1", "0-1, 5", 7, "12"], ["host-b-2", "none", 0, "tail off"]]
    assert [w.value for w in at.warning] == [
        "Not seen for over 3 minutes (stopped or died in the last hour; Kafka gave their partitions to the others): "
        "host-b-2."
    ]
