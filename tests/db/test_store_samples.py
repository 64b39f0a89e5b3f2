"""monitor.store.samples against real databases: one row per cycle, ok or failed, and the clusters they make."""

from __future__ import annotations

from factories import T0, make_group, make_snapshot

from monitor.models import TopicPartition
from monitor.store import ClusterRow, SampleRow, read_clusters, read_groups, read_samples

TP = TopicPartition


def test_clusters_share_a_database_without_mixing(db_store, db_engine):
    db_store.write_snapshot(make_snapshot(cluster="east"))
    db_store.write_snapshot(make_snapshot(T0 + 10_000, cluster="west", groups=[make_group(committed={TP("t", 0): 1})]))
    assert [(r.cluster, r.group_id, r.total_lag) for r in read_groups(db_engine)] == [
        ("east", "g1", 70),
        ("west", "g1", 99),
    ]
    assert [(r.cluster, r.total_lag) for r in read_groups(db_engine, "west")] == [("west", 99)]
    assert read_clusters(db_engine) == [
        ClusterRow("east", samples=1, first_sample_at=T0, last_sample_at=T0, last_ok=True, last_errors=(), groups=1),
        ClusterRow(
            "west",
            samples=1,
            first_sample_at=T0 + 10_000,
            last_sample_at=T0 + 10_000,
            last_ok=True,
            last_errors=(),
            groups=1,
        ),
    ]


def test_failed_cycles_are_recorded(db_store, db_engine):
    ok_id = db_store.write_snapshot(make_snapshot(errors=()))
    partial_id = db_store.write_snapshot(make_snapshot(T0 + 10_000, errors=("describe g2: timed out",)))
    failed_id = db_store.write_sample_error("c1", T0 + 20_000, 30_000, ["cluster unreachable"])

    assert read_samples(db_engine, "c1", since=T0) == [
        SampleRow(ok_id, "c1", T0, 120, 1, 2, True, (), 0, 120),  # the sampling part, until the cycle's end
        SampleRow(partial_id, "c1", T0 + 10_000, 120, 1, 2, False, ("describe g2: timed out",), 0, 120),
        SampleRow(failed_id, "c1", T0 + 20_000, 30_000, 0, 0, False, ("cluster unreachable",), 0, 30_000),
    ]
    db_store.write_cycle_time(ok_id, 150, 120)  # what the collector writes once health and alerts are done
    first = read_samples(db_engine, "c1", since=T0)[0]
    assert (first.duration_ms, first.sampling_ms) == (150, 120)
    assert read_samples(db_engine, "c1", since=T0 + 15_000)[0].id == failed_id
    assert read_clusters(db_engine)[0] == ClusterRow(
        "c1",
        samples=3,
        first_sample_at=T0,
        last_sample_at=T0 + 20_000,
        last_ok=False,
        last_errors=("cluster unreachable",),
        groups=1,
    )
    # the failed cycle did not hide the group's lag
    assert read_groups(db_engine)[0].last_sample_at == T0 + 10_000
