"""A coordinated collector's report on itself (`--shard kafka`), once a cycle.

Which __consumer_offsets partitions it holds and since when, how many groups that
is, and how many records of those partitions its tail has not read yet: into the
store (the Health page, `lagmon collectors`) and /metrics. A failed write costs
one cycle's row, never the cycle.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.engine import Engine

from monitor.clock import wall_ms
from monitor.exporter import MetricsExporter
from monitor.logs import get_logger
from monitor.models import ClusterSnapshot
from monitor.shard import KafkaShard
from monitor.store.collectors import CollectorRow, write_collector
from monitor.tail import OffsetsTail

log = get_logger("collectors")


class Roster:
    """A collector observer writing this collector's row."""

    def __init__(
        self,
        engine: Engine,
        cluster: str,
        shard: KafkaShard,
        tail: OffsetsTail | None,
        exporter: MetricsExporter | None,
        now_ms: Callable[[], int] = wall_ms,
    ):
        self.engine, self.cluster, self.shard, self.tail, self.exporter = engine, cluster, shard, tail, exporter
        self.now_ms = now_ms
        self.started_at = now_ms()
        self._groups = 0
        self._failing = False

    def __call__(self, result, snapshot: ClusterSnapshot | None, report) -> None:
        if snapshot is not None:
            self._groups = len(snapshot.groups)
        row = CollectorRow(
            self.shard.name,
            dict(self.shard.since),
            self._groups,
            None if self.tail is None else self.tail.lag(),
            self.started_at,
            self.now_ms(),
        )
        if self.exporter is not None:
            self.exporter.observe_collector(row)
        try:
            write_collector(self.engine, self.cluster, row)
        except Exception as e:  # the store may be away: the cycle says so; this row waits for the next
            if not self._failing:
                log.warning("this collector's row not stored (retrying each cycle): %s: %s", type(e).__name__, e)
            self._failing = True
            return
        self._failing = False
