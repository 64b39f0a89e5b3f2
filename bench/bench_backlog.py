"""What a store outage costs the collector: memory per kept cycle, and the time to write the kept cycles back.

Builds cycles of G groups x P partitions (default 1,000 x 20, bench_collector's busy case), as the
collector keeps them while the store is away (monitor.collector.StoreBacklog), and measures:
- the memory one kept cycle really holds (tracemalloc) against `CycleWrite.estimate_bytes`, which
  LAGMON_STORE_BACKLOG_MB is counted in;
- the time to write N kept cycles into a fresh SQLite store once it is back, against the peer:
  the same cycles written one by one as they come, as when nothing failed.
This is the store part alone, in-process; the whole collector under outages is tests/integration/test_outages.py.
Run:
    PYTHONPATH=. .venv/bin/python bench/bench_backlog.py [--groups 1000] [--partitions 20] [--cycles 20]
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
import tracemalloc
from pathlib import Path

from monitor.collector import StoreBacklog
from monitor.models import (
    ClusterSnapshot,
    GroupSnapshot,
    GroupState,
    GroupType,
    Member,
    PartitionOffsets,
    StoreUnavailable,
    intern_tp,
)
from monitor.store import Store, make_engine, upgrade
from monitor.store.writer import CycleWrite


def build_cycle(t: int, groups: int, partitions: int) -> CycleWrite:
    """One cycle: every partition committed and produced to since the last (offsets move by t)."""
    snapshot_groups, offsets = {}, {}
    for g in range(groups):
        committed = {}
        for p in range(partitions):
            tp = intern_tp(f"topic-{g}", p)
            committed[tp] = 5_000_000_000 + 10 * t + p
            offsets[tp] = PartitionOffsets(0, 5_000_000_100 + 10 * t + p, None)
        member = Member(f"consumer-{g}", f"client-{g}", "/10.0.0.1", assignment=tuple(committed))
        snapshot_groups[f"group-{g}"] = GroupSnapshot(
            f"group-{g}", GroupState.STABLE, GroupType.CONSUMER, committed=committed, members=(member,)
        )
    snapshot = ClusterSnapshot("bench", 1_700_000_000_000 + 1000 * t, snapshot_groups, offsets)
    return CycleWrite("bench", snapshot.taken_at, 100, snapshot)


class Away:
    """A store that is away until told otherwise."""

    def __init__(self, store: Store):
        self.store, self.down = store, True

    def write_cycle(self, cycle: CycleWrite) -> int:
        if self.down:
            raise StoreUnavailable("cannot store the cycle: the database is away (bench)")
        return self.store.write_cycle(cycle)


def fresh_store(folder: Path, name: str) -> Store:
    engine = make_engine(f"sqlite:///{folder / name}")
    upgrade(engine)
    return Store(engine)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=20)
    ap.add_argument("--cycles", type=int, default=20)
    args = ap.parse_args()
    print(f"{platform.node()}, Python {platform.python_version()}; {args.groups} groups x {args.partitions} partitions")
    build_cycle(0, args.groups, args.partitions)  # the interned topic-partitions exist, as in a running collector
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    kept = [build_cycle(t, args.groups, args.partitions) for t in range(1, args.cycles + 1)]
    held = sum(d.size_diff for d in tracemalloc.take_snapshot().compare_to(before, "filename")) / len(kept)
    tracemalloc.stop()
    estimate = kept[0].estimate_bytes()
    print(
        f"memory per kept cycle: {held / 1e6:.2f} MB held, {estimate / 1e6:.2f} MB counted "
        f"(counted / held {estimate / held:.2f}); the default 256 MB keeps {int((256 << 20) / estimate)} cycles"
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        peer = fresh_store(folder, "as-they-come.db")
        started = time.perf_counter()
        for cycle in kept:
            peer.write_cycle(cycle)
        as_they_come = time.perf_counter() - started
        away = Away(fresh_store(folder, "after-an-outage.db"))
        backlog = StoreBacklog(1 << 40)
        for cycle in kept:
            backlog.write(away, cycle)
        away.down = False
        started = time.perf_counter()
        backlog.flush(away)
        written_back = time.perf_counter() - started
    print(
        f"{len(kept)} cycles written back after the outage: {written_back:.2f} s "
        f"({written_back / len(kept) * 1000:.0f} ms a cycle); the peer, the same cycles as they come: "
        f"{as_they_come:.2f} s; ratio {written_back / as_they_come:.2f}"
    )


if __name__ == "__main__":
    main()
