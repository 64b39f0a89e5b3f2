"""The dashboard over a database two collector shards write: every group shows, as from one collector."""

from __future__ import annotations

import time

import pytest
from dashboard_seed import open_app

from monitor.models import (
    ClusterSnapshot,
    GroupSnapshot,
    GroupState,
    GroupType,
    Member,
    PartitionOffsets,
    TopicPartition,
)
from monitor.offsets_topic.history import TailUpdate
from monitor.shard import Shard
from monitor.store import Store, make_engine, upgrade
from monitor.store.offsets_tail import write_tail_update

ONE, TWO = Shard(1, 2), Shard(2, 2)
NAMES = [f"svc-{i}" for i in range(30)]
GROUPS = {shard: [g for g in NAMES if shard.owns(g)][:2] for shard in (ONE, TWO)}


def snapshot(at: int, groups: list[str], step: int) -> ClusterSnapshot:
    out = {}
    for gid in groups:
        tp = TopicPartition(f"t-{gid}", 0)
        out[gid] = GroupSnapshot(
            gid,
            GroupState.STABLE,
            GroupType.CLASSIC,
            assignor="range",
            coordinator=1,
            members=(Member(f"m-{gid}", "client", "/10.0.0.1", assignment=(tp,)),),
            committed={tp: 100 * step},
        )
    parts = {
        TopicPartition(f"t-{gid}", 0): PartitionOffsets(0, 100 * step + 10 * (i + 1)) for i, gid in enumerate(groups)
    }
    return ClusterSnapshot("prod", at, out, parts)


@pytest.fixture
def sharded_db(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'shards.db'}"
    upgrade(url)
    engine = make_engine(url)
    now = int(time.time() * 1000)
    stores = {shard: Store(engine, shard) for shard in (ONE, TWO)}
    for step in range(30):  # two shards taking turns, 10 s apart
        for k, (shard, store) in enumerate(stores.items()):
            store.write_snapshot(snapshot(now - (30 - step) * 10_000 + k * 4_000, GROUPS[shard], step))
    for shard, store in stores.items():
        write_tail_update(store, "prod", TailUpdate(positions={0: 10 * shard.index}), now)
    engine.dispose()
    monkeypatch.setenv("LAGMON_DATABASE_URL", url)
    return url


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
