"""A synthetic lagmon store for benchmarks: the real schema, filled fast with realistic offsets.

`groups` groups each read their own topic of `partitions` partitions, sampled
every `interval_ms`. Four kinds of group, by group number mod 4: keeping up,
falling behind (consumes 80 % of what is produced), catching up (starts an hour
behind, consumes 120 %), and stalled for two hours. Rebalances: a few to a few
dozen per group and day, eager / cooperative / consumer by group number mod 3.
Rows go in by sqlite3 executemany into tables created by monitor.store.upgrade.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time

import numpy as np

from monitor.store import upgrade

CLUSTER = "bench"
PROTOCOLS = ("eager", "cooperative", "consumer")
TRIGGERS = ("member_joined", "member_left", "session_timeout", "poll_timeout")


class SynthStore:
    def __init__(
        self, path: str, groups: int, partitions: int, start_ms: int, interval_ms: int = 10_000, seed: int = 7
    ):
        self.path, self.groups, self.partitions = path, groups, partitions
        self.start_ms, self.interval_ms = start_ms, interval_ms
        rng = np.random.default_rng(seed)
        n = groups * partitions
        self.rate = rng.uniform(5, 50, n)  # records/s produced per partition
        self.kind = np.repeat(np.arange(groups) % 4, partitions)
        self.base = rng.integers(0, 1_000_000, n)
        self.samples_written = 0
        upgrade(f"sqlite:///{path}")
        with self._connect() as db:
            db.executemany(
                "INSERT INTO topic_partitions (id, cluster, topic, partition) VALUES (?, ?, ?, ?)",
                [(i + 1, CLUSTER, f"topic-{i // partitions:04d}", i % partitions) for i in range(n)],
            )
            db.executemany(
                "INSERT INTO consumer_groups (id, cluster, group_id, first_seen_at) VALUES (?, ?, ?, ?)",
                [(g + 1, CLUSTER, f"group-{g:04d}", start_ms) for g in range(groups)],
            )
            db.executemany(
                "INSERT INTO group_partitions (id, group_ref, tp_id) VALUES (?, ?, ?)",
                [(i + 1, i // partitions + 1, i + 1) for i in range(n)],
            )

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=OFF")
        return db

    def offsets_at(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(log_end, committed) of every partition at sample k."""
        t = k * self.interval_ms / 1000
        log_end = (self.base + self.rate * t).astype(np.int64)
        keeping = log_end - (self.rate * (k % 3)).astype(np.int64)
        behind = (self.base + 0.8 * self.rate * t).astype(np.int64)
        catching = np.minimum(log_end, (self.base - self.rate * 3600 + 1.2 * self.rate * t).astype(np.int64))
        stall_t = min(max(t, 6 * 3600), 8 * 3600) if t >= 6 * 3600 else t
        stalled = np.where(
            (t >= 6 * 3600) & (t < 8 * 3600), (self.base + self.rate * stall_t).astype(np.int64), log_end
        )
        committed = np.select([self.kind == 0, self.kind == 1, self.kind == 2], [keeping, behind, catching], stalled)
        return log_end, np.maximum(committed, 0)

    def append(self, samples: int, batch: int = 200) -> int:
        """Write the next `samples` samples (and their rebalances); rows written to the two fact tables."""
        n = self.groups * self.partitions
        ids = np.arange(1, n + 1)
        rows = 0
        with self._connect() as db:
            for first in range(self.samples_written, self.samples_written + samples, batch):
                last = min(first + batch, self.samples_written + samples)
                sample_rows, offsets, ends = [], [], []
                for k in range(first, last):
                    sid = k + 1
                    taken = self.start_ms + k * self.interval_ms
                    sample_rows.append((sid, CLUSTER, taken, 150, self.groups, n, 1, 0))
                    log_end, committed = self.offsets_at(k)
                    sids = np.full(n, sid)
                    ends.extend(zip(sids.tolist(), ids.tolist(), log_end.tolist(), strict=True))
                    offsets.extend(zip(sids.tolist(), ids.tolist(), committed.tolist(), strict=True))
                db.executemany(
                    "INSERT INTO samples (id, cluster, taken_at, duration_ms, groups, partitions, ok, "
                    "resolution_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    sample_rows,
                )
                db.executemany(
                    "INSERT INTO partition_samples (sample_id, tp_id, log_start, log_end, lso_gap) "
                    "VALUES (?, ?, 0, ?, 0)",
                    ends,
                )
                db.executemany("INSERT INTO offset_samples (sample_id, gp_id, committed) VALUES (?, ?, ?)", offsets)
                rows += len(ends) + len(offsets)
            db.executemany(
                "INSERT OR IGNORE INTO rebalances (cluster, group_id, started_at, ended_at, protocol, trigger, "
                "members_before, members_after, members_joined, members_left, partitions_moved, source) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'polling')",
                self._rebalances(self.samples_written, self.samples_written + samples),
            )
        self.samples_written += samples
        return rows

    def _rebalances(self, first: int, last: int) -> list[tuple]:
        rng = random.Random(first)
        span_ms = (last - first) * self.interval_ms
        out = []
        for g in range(self.groups):
            per_day = 2 + (g * 7) % 40
            for _ in range(np.random.default_rng(g + first).poisson(per_day * span_ms / 86_400_000)):
                start = self.start_ms + first * self.interval_ms + rng.randrange(span_ms)
                member = {
                    "member_id": f"m-{g}-{rng.randrange(5)}",
                    "client_id": f"app-{g}-{rng.randrange(3)}",
                    "host": f"/10.0.{g % 20}.{rng.randrange(4)}",
                    "instance_id": None,
                }
                joined = rng.random() < 0.5
                out.append(
                    (
                        CLUSTER,
                        f"group-{g:04d}",
                        start,
                        start + rng.randrange(200, 30_000),
                        PROTOCOLS[g % 3],
                        rng.choice(TRIGGERS),
                        3,
                        3 + (1 if joined else -1),
                        json.dumps([member] if joined else []),
                        json.dumps([] if joined else [member]),
                        rng.randrange(1, self.partitions + 1),
                    )
                )
        return out


def build(
    path: str, group_partitions: int, samples: int, start_ms: int | None = None, partitions: int = 10
) -> SynthStore:
    """A store of `group_partitions` group-partitions x `samples` samples, ending about now."""
    start = start_ms if start_ms is not None else int(time.time() * 1000) - samples * 10_000
    store = SynthStore(path, max(1, group_partitions // partitions), partitions, start)
    store.append(samples)
    return store
