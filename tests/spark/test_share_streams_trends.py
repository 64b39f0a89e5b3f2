"""Lag trends of share and streams groups: the analysis reads them like any group's (real Spark, real SQLite)."""

from __future__ import annotations

from factories import make_share_group, make_streams_group

from monitor.models import ClusterSnapshot, PartitionOffsets, SharePartition
from monitor.store import Store, make_engine, read_trends, upgrade
from spark.main import analyze_once

T0 = 1_700_006_400_000


def snapshot(k: int) -> ClusterSnapshot:
    """Sample k (every 10 s): the share group falls 5 records a sample further behind; streams stays 10 back."""
    share = make_share_group(
        share={tp: SharePartition(40 + 10 * k, 25) for tp in make_share_group().share}  # done 25 after a moving start
    )
    streams = make_streams_group()
    ends = dict.fromkeys(share.committed, 100 + 15 * k) | dict.fromkeys(streams.committed, 100)
    parts = {tp: PartitionOffsets(0, end) for tp, end in ends.items()}
    return ClusterSnapshot("c1", T0 + k * 10_000, {share.group_id: share, streams.group_id: streams}, parts)


def test_share_and_streams_groups_get_lag_trends_with_kafkas_lag(spark, tmp_path):
    url = f"sqlite:///{tmp_path / 'lagmon.db'}"
    upgrade(url)
    engine = make_engine(url)
    store = Store(engine)
    for k in range(12):
        store.write_snapshot(snapshot(k))
    analyze_once(spark, engine, url, str(tmp_path / "history"), report=lambda m: None)

    [share] = read_trends(engine, "c1", "jobs-share", "1h", "")
    # per partition: log end 100 + 15k - (start 40 + 10k + 25 done) = 35 + 5k; two partitions, k = 11
    assert share.lag_last == 2 * (35 + 5 * 11) and share.lag_slope_per_min > 0
    [streams] = read_trends(engine, "c1", "wordcount", "1h", "")
    assert streams.lag_last == 4 * 10 and streams.lag_slope_per_min == 0
    engine.dispose()
