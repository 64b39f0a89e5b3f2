"""Store write time per collector cycle and bytes on disk per group-partition sample.

Writes N group-partitions (default 20,000: 400 groups x 50 partitions over 200
topics, so 10,000 topic-partitions, each read by 2 groups) x S samples
(default 30) into a fresh SQLite file through monitor.store.Store, with
realistic 64-bit offsets (~5e9, moving every cycle). Bytes are the main file
after a WAL checkpoint divided by the group-partition rows stored; they include
everything (partition samples, dimensions, SCD rows, indexes). The peers are
the issue's targets: 0.3 s per cycle and 40 bytes per group-partition sample.
Run:
    .venv/bin/python bench/bench_store.py [--group-partitions 20000] [--samples 30]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa

from monitor.models import (
    ClusterSnapshot,
    GroupSnapshot,
    GroupState,
    GroupType,
    Member,
    PartitionOffsets,
    TopicPartition,
)
from monitor.store import Store, make_engine, read_group_lag, read_groups, upgrade
from monitor.store.schema import samples

TARGET_WRITE_S = 0.3
TARGET_BYTES = 40.0


class Workload:
    """A cluster whose offsets move every cycle; groups, members and assignments stay put."""

    def __init__(
        self,
        group_partitions: int,
        partitions_per_topic: int = 50,
        groups_per_topic: int = 2,
        members_per_group: int = 5,
        seed: int = 7,
    ):
        self.rng = random.Random(seed)
        n_groups = group_partitions // partitions_per_topic
        n_topics = max(1, n_groups // groups_per_topic)
        self.topics = [f"topic-{i:04d}" for i in range(n_topics)]
        self.tps = [TopicPartition(t, p) for t in self.topics for p in range(partitions_per_topic)]
        self.log_end = {tp: 5_000_000_000 + self.rng.randrange(10**9) for tp in self.tps}
        self.groups = []
        for i in range(n_groups):
            topic = self.topics[i % n_topics]
            tps = [TopicPartition(topic, p) for p in range(partitions_per_topic)]
            members = tuple(
                Member(
                    f"consumer-{i}-{m}-{'x' * 24}",
                    f"client-{i}",
                    f"/10.0.{i % 250}.{m}",
                    assignment=tuple(tps[m::members_per_group]),
                )
                for m in range(members_per_group)
            )
            self.groups.append((f"group-{i:04d}", tps, members))
        self.committed = {
            (g, tp): self.log_end[tp] - self.rng.randrange(1000) for g, tps, _ in self.groups for tp in tps
        }

    def snapshot(self, taken_at: int) -> ClusterSnapshot:
        for tp in self.tps:
            self.log_end[tp] += self.rng.randrange(5000)
        groups = {}
        for group_id, tps, members in self.groups:
            committed = {}
            for tp in tps:
                c = self.committed[(group_id, tp)] = max(
                    self.committed[(group_id, tp)], self.log_end[tp] - self.rng.randrange(2000)
                )
                committed[tp] = c
            groups[group_id] = GroupSnapshot(
                group_id,
                GroupState.STABLE,
                GroupType.CLASSIC,
                assignor="range",
                coordinator=1,
                members=members,
                committed=committed,
            )
        # Retention keeps ~50 M offsets per partition; no open transactions (LSO = HW).
        partitions = {tp: PartitionOffsets(e - 50_000_000, e, e) for tp, e in self.log_end.items()}
        return ClusterSnapshot("bench", taken_at, groups, partitions, duration_ms=900)


def table_bytes(engine) -> dict[str, int]:
    """Bytes per table/index from SQLite's dbstat, when the library has it."""
    try:
        with engine.connect() as conn:
            rows = conn.exec_driver_sql("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC")
            return dict(rows.all())
    except sa.exc.OperationalError:
        return {}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--group-partitions", type=int, default=20_000)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument(
        "--groups-per-topic",
        type=int,
        default=2,
        help="groups reading each topic (1 = one partition sample per group-partition)",
    )
    parser.add_argument("--db", type=Path, help="keep the database here (default: a temp dir)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="lagmon-bench-") as tmp:
        path = args.db or Path(tmp) / "bench.db"
        path.unlink(missing_ok=True)
        engine = make_engine(f"sqlite:///{path}")
        upgrade(engine)
        with engine.begin() as conn:
            # Sample ids as after ~4 months of 10 s cycles (3-byte varints), not 1..30.
            conn.execute(
                samples.insert().values(
                    id=999_999,
                    cluster="bench",
                    taken_at=0,
                    duration_ms=0,
                    groups=0,
                    partitions=0,
                    ok=False,
                    resolution_ms=0,
                )
            )
        store = Store(engine)
        work = Workload(args.group_partitions, groups_per_topic=args.groups_per_topic)
        n_gp = sum(len(tps) for _, tps, _ in work.groups)
        snapshots = [work.snapshot(1_700_000_000_000 + i * 10_000) for i in range(args.samples)]

        times = []
        for snap in snapshots:
            started = time.perf_counter()
            store.write_snapshot(snap)
            times.append(time.perf_counter() - started)

        started = time.perf_counter()
        groups = read_groups(engine, "bench")
        read_groups_s = time.perf_counter() - started
        started = time.perf_counter()
        read_group_lag(engine, "bench", groups[0].group_id)
        read_lag_s = time.perf_counter() - started

        with engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            rows = conn.exec_driver_sql("SELECT count(*) FROM offset_samples").scalar()
        sizes = table_bytes(engine)
        engine.dispose()
        file_bytes = path.stat().st_size

    steady = times[1:] or times  # the first cycle also interns every dimension row
    per_cycle = statistics.median(steady)
    per_row = file_bytes / rows
    print(
        f"{n_gp} group-partitions x {args.samples} samples, {len(work.tps)} topic-partitions, {len(work.groups)} groups"
    )
    print(
        f"write per cycle: median {per_cycle:.3f} s, max {max(steady):.3f} s, first {times[0]:.3f} s "
        f"-> {per_cycle / TARGET_WRITE_S:.2f}x of the {TARGET_WRITE_S} s target"
    )
    print(
        f"bytes per group-partition sample: {per_row:.1f} ({file_bytes} bytes / {rows} rows) "
        f"-> {per_row / TARGET_BYTES:.2f}x of the {TARGET_BYTES:.0f} B target"
    )
    print(f"read_groups {read_groups_s * 1000:.0f} ms, read_group_lag {read_lag_s * 1000:.0f} ms")
    if sizes:
        print(
            "largest objects: " + ", ".join(f"{name} {size / rows:.1f} B/row" for name, size in list(sizes.items())[:4])
        )


if __name__ == "__main__":
    main()
