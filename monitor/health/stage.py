"""The collector's health step: the health engine with its edges in the store.

Before the first cycle it restores the engine's saved state and replays the
samples stored since (none after a clean stop), or, with no saved state,
rebuilds the windows from the newest stored samples: a restarted collector
neither starts from an empty history nor re-reads a long one. Each cycle it
hands the collector the status changes, with their reasons, which the collector
stores with the cycle in the status history that `monitor status` and the
dashboard read; it saves the engine's state every minute and when the
collector stops. A coordinated collector (KafkaShard) saves none, since the
groups it holds move: it builds each group's windows from the stored samples
when it takes the group over (a share group's archived counts and their
rises too, so a rise the previous owner saw still alerts), and forgets those
it lets go.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from monitor.health.engine import HealthEngine
from monitor.health.report import HealthReport
from monitor.logs import get_logger
from monitor.models import ClusterSnapshot, Status, TopicPartition, intern_tp
from monitor.shard import UNSHARDED, KafkaShard, Shard
from monitor.store import read_partition_history
from monitor.store.health import (
    StatusChanges,
    read_current_statuses,
    read_health_state,
    read_recent_commit_samples,
    write_health_state,
)
from monitor.store.share import read_share_history

log = get_logger("health")
SAVE_EVERY_MS = 60_000
HISTORY_PRIME_MS = 3600_000  # without a saved state: how far back log-end histories and share samples are reloaded
PRIME_SAMPLES_PER_COMMIT = 6  # without a saved state: samples reloaded per window slot


class HealthStage:
    def __init__(self, db: Engine, engine: HealthEngine, shard: Shard | KafkaShard = UNSHARDED):
        self.db = db
        self.engine = engine
        self.shard = shard
        self._version = shard.version
        self._primed = False
        self._saved_at = 0
        self._last_at: int | None = None
        self._statuses: dict = {}  # (group, tp) -> Status as last written
        self._group_statuses: dict = {}  # group -> (status, worst) as last written

    def judge(self, snapshot: ClusterSnapshot) -> tuple[HealthReport, StatusChanges]:
        """The snapshot's report and the status changes it brings, which the collector stores with the cycle.

        The statuses remembered here are those written or queued to be (a cycle the store could not
        take yet is kept by the collector and written later, in order).
        """
        if not self._primed:
            self.prime()
        elif self.shard.version != self._version:
            self._take_over(snapshot)
        self._version = self.shard.version
        report = self.engine.observe(snapshot)
        changes = self._status_changes(report)
        self._last_at = report.at
        if report.at - self._saved_at >= SAVE_EVERY_MS:
            self.save()
        return report, changes

    def prime(self) -> None:
        """The saved state plus the cycles stored after it was saved (after a crash: at most a minute's)."""
        cluster = self.engine.cluster
        saved = None if self.shard.coordinated else read_health_state(self.db, cluster, self.shard.label)
        since = None
        if saved is not None and self._restore(saved[1]):
            since = self._saved_at = saved[0]
        samples = read_recent_commit_samples(
            self.db,
            cluster,
            self.engine.settings.window * PRIME_SAMPLES_PER_COMMIT,
            shard=self.shard.label,
            since=since,
        )
        histories: dict[TopicPartition, list[tuple[int, int]]] = {}
        newest = max((points[-1][0] for points in samples.values()), default=None)
        if newest is not None:
            for p in read_partition_history(
                self.db, cluster, newest - HISTORY_PRIME_MS if since is None else since + 1
            ):
                if p.resolution_ms == 0:
                    histories.setdefault(intern_tp(p.topic, p.partition), []).append((p.log_end, p.log_ends_at))
            self.engine.replay_shares(
                read_share_history(self.db, cluster, newest - HISTORY_PRIME_MS if since is None else since)
            )
        self.engine.replay(samples, histories)
        self._statuses, self._group_statuses = read_current_statuses(self.db, cluster)
        self._primed = True

    def _restore(self, records) -> bool:
        try:
            return self.engine.restore_state(records)
        except Exception as e:  # a saved state that cannot be read costs a slower start, as none would
            log.warning("saved health state unreadable (%s: %s): judging from the stored samples", type(e).__name__, e)
            return False

    def _take_over(self, snapshot: ClusterSnapshot) -> None:
        """A coordinated collector's groups changed: forget those let go (unreported: they are not gone),
        and rebuild the windows of those taken over from the newest stored samples, which hold them."""
        self.engine.forget([g for g in self.engine.groups() if not self.shard.owns(g)])
        taken = {g for g in snapshot.groups if not self.engine.knows(g)}
        if not taken:
            return
        cluster = self.engine.cluster
        samples = read_recent_commit_samples(
            self.db, cluster, self.engine.settings.window * PRIME_SAMPLES_PER_COMMIT, shard=self.shard.label
        )
        self.engine.replay({key: points for key, points in samples.items() if key[0] in taken}, {})
        shares = {g for g in taken if snapshot.groups[g].share}  # the only ones with share samples to read
        if shares:
            since = snapshot.taken_at - HISTORY_PRIME_MS
            self.engine.replay_shares(read_share_history(self.db, cluster, since, shares))
        self._statuses, self._group_statuses = read_current_statuses(self.db, cluster)

    def save(self) -> None:
        """Write the engine's state (every minute, and when the collector stops)."""
        if self._last_at is None or self.shard.coordinated:
            return
        try:
            write_health_state(
                self.db, self.engine.cluster, self.shard.label, self._last_at, self.engine.export_state()
            )
            self._saved_at = self._last_at
        except Exception as e:  # a failed save costs a slower restart, never a cycle
            log.warning("health state not saved (will retry): %s: %s", type(e).__name__, e)

    def _status_changes(self, report: HealthReport) -> StatusChanges:
        rows, group_rows = [], []
        for group_id in report.changed:
            g = report.groups[group_id]
            for p in g.partitions:
                key = (group_id, p.tp)
                if self._statuses.get(key) != p.status:
                    self._statuses[key] = p.status
                    # OK's reasons ("caught up", "making progress") change by the cycle and would be stale
                    # on this row: only a problem's reason is kept, worded to stay true
                    rows.append((group_id, p.tp, p.status, None if p.status is Status.OK else p.reason))
            if self._group_statuses.get(group_id) != (g.status, g.worst):
                self._group_statuses[group_id] = (g.status, g.worst)
                group_rows.append((group_id, g.status, g.worst, g.total_lag, g.complete))
        if report.removed:
            for key in [k for k in self._statuses if k[0] in report.removed]:
                del self._statuses[key]
            for group_id in report.removed:
                self._group_statuses.pop(group_id, None)
        return StatusChanges(report.at, tuple(rows), tuple(group_rows))
