"""The alert engine: the collector's per-cycle observer that judges health and raises alerts.

Each cycle it (1) extends every partition's commit window and log-end history
from the snapshot, (2) evaluates Burrow-style status and lag in seconds,
(3) stores status changes, (4) runs the rules and the alert state machine and
(5) queues notifications in the outbox, which the sender thread delivers.
Everything it needs after a restart (windows, statuses, open alerts) is
rebuilt from the database first, so a restart neither re-fires nor forgets.
The offsets-topic tail can feed exact commits through `record_commit`; those
partitions then ignore the sampled committed offsets.
A collector shard judges only its own groups: it loads, resolves and fires only
their alerts, and its cluster-wide alerts (collector health) carry the shard
in the topic field ("shard 2/3"), so shards never resolve each other's alerts.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import replace
from collections.abc import Callable

from sqlalchemy.engine import Engine

from monitor.alerts.lifecycle import (
    ClusterFacts,
    GroupFacts,
    PartitionFacts,
    compute_alert_changes,
    evaluate_rules,
)
from monitor.alerts.message import compose_message
from monitor.alerts.rules import RuleSet
from monitor.evaluator import (
    CommitPoint,
    GroupStatus,
    PartitionStatus,
    PartitionWindow,
    compute_group_rollup,
    compute_sampled_commits,
    evaluate_partition,
)
from monitor.lag import TimeLag, compute_compact_history, compute_time_lag
from monitor.models import ClusterSnapshot, EventKind, Status, TopicPartition, UnknownGroup
from monitor.shard import UNSHARDED, Shard
from monitor.store import read_events, read_partition_history, read_rebalances
from monitor.store.alerts import (
    apply_alert_retention,
    read_current_statuses,
    read_open_alerts,
    read_recent_commit_samples,
    read_silences,
    write_alert_changes,
    write_status_changes,
)
from monitor.store.reader import read_group_shard

HISTORY_POINTS = 120  # log-end points kept per partition: plateaus compacted, older half thinned
HISTORY_PRIME_MS = 3600_000  # how far back the log-end history is reloaded on start
RETENTION_EVERY_MS = 3600_000  # old alerts, status rows and silences are dropped this often
PRIME_SAMPLES_PER_COMMIT = 6  # samples reloaded per window slot (offsets change less often than we poll)


class AlertEngine:
    def __init__(self, engine: Engine, cluster: str, rules: RuleSet, *, dashboard_url: str | None = None,
                 sender=None, now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
                 report: Callable[[str], None] = print, exact_reader=None, exact_top: int = 20,
                 shard: Shard = UNSHARDED):
        self.engine = engine
        self.shard = shard
        self.scope = f"shard {shard}" if shard.sharded else ""  # the topic field of this shard's cluster-wide alerts
        self.cluster = cluster
        self.rules = rules
        self.dashboard_url = dashboard_url
        self.sender = sender
        self.now_ms = now_ms
        self.report = report
        self.config = rules.evaluator
        self.exact_reader = exact_reader  # reads record timestamps at committed offsets (monitor.kafka)
        self.exact_top = exact_top
        self.lag_seconds: dict[tuple[str, TopicPartition], TimeLag | None] = {}
        self.commits: dict[tuple[str, TopicPartition], deque[CommitPoint]] = {}
        self.exact: set[tuple[str, TopicPartition]] = set()
        self.log_ends: dict[TopicPartition, list[tuple[int, int]]] = {}
        self.statuses: dict[tuple[str, TopicPartition], Status] = {}
        self.group_statuses: dict[str, tuple[Status, Status]] = {}
        self.last_ok_at: int | None = None
        self.carried: dict[tuple[str, TopicPartition], tuple[Status, int | None]] = {}
        self.last: dict[str, GroupStatus] = {}
        self._primed = False
        self._retained_at = 0
        self._lock = threading.Lock()  # guards commits/exact against record_commit from the tail's thread

    # -- inputs -----------------------------------------------------------------------------

    def prime(self) -> None:
        """Rebuild windows, log-end histories and last statuses from the store."""
        now = self.now_ms()
        samples = read_recent_commit_samples(self.engine, self.cluster,
                                             self.config.window * PRIME_SAMPLES_PER_COMMIT, shard=self.shard.label)
        for key, points in samples.items():
            self.commits[key] = deque(compute_sampled_commits(points), maxlen=self.config.window)
            self.last_ok_at = max(self.last_ok_at or 0, points[-1][0])
        for p in read_partition_history(self.engine, self.cluster, now - HISTORY_PRIME_MS):
            if p.resolution_ms == 0:
                self.log_ends.setdefault(TopicPartition(p.topic, p.partition), []).append((p.log_end, p.at))
        for tp, history in self.log_ends.items():
            self.log_ends[tp] = compute_compact_history(history, HISTORY_POINTS)
        self.statuses, self.group_statuses = read_current_statuses(self.engine, self.cluster)
        # A consumer stuck since before the restart adds no new sampled commits, so its window may
        # be too short to judge again: keep its last status while its offset stays where it was.
        for key, status in self.statuses.items():
            if status != Status.OK and key in samples:
                self.carried[key] = (status, samples[key][-1][1])
        self._primed = True

    def record_commit(self, group: str, tp: TopicPartition, offset: int, at: int) -> None:
        """An exact commit (offsets-topic tail); the lag is taken against the newest known log end."""
        key = (group, tp)
        history = self.log_ends.get(tp)
        lag = max(0, history[-1][0] - offset) if history else None
        with self._lock:  # the tail runs in its own thread
            if key not in self.exact:
                self.exact.add(key)
                self.commits[key] = deque(maxlen=self.config.window)
            self.commits.setdefault(key, deque(maxlen=self.config.window)).append(CommitPoint(offset, at, lag))

    def __call__(self, result, snapshot: ClusterSnapshot | None) -> None:
        """Collector observer: one cycle's result (and its snapshot when the cycle succeeded)."""
        self.observe(snapshot, result.taken_at)

    # -- one cycle --------------------------------------------------------------------------

    def observe(self, snapshot: ClusterSnapshot | None, taken_at: int) -> list:
        if not self._primed:
            self.prime()
        now = taken_at
        groups: dict[str, GroupFacts] = {}
        if snapshot is not None:
            self.last_ok_at = snapshot.taken_at
            groups = self._update_and_evaluate(snapshot)
        facts = ClusterFacts(self.cluster, now, snapshot is not None, self.last_ok_at, groups)
        conditions = [c if c.group_id else replace(c, topic=self.scope) for c in evaluate_rules(self.rules, facts)]
        mine = [a for a in read_open_alerts(self.engine, self.cluster) if self.owns_alert(a.group_id, a.topic)]
        changed, notes = compute_alert_changes(mine, conditions, self.rules,
                                               read_silences(self.engine, now), self.cluster, now,
                                               sample_ok=snapshot is not None)
        if changed:
            write_alert_changes(self.engine, changed, notes, now,
                                lambda alert, kind: compose_message(alert, kind, now, self.dashboard_url))
        if notes and self.sender is not None:
            self.sender.wake()
        if now - self._retained_at >= RETENTION_EVERY_MS and self.shard.leads:
            self._retained_at = now
            apply_alert_retention(self.engine, self.cluster, now)
        return notes

    def owns_alert(self, group_id: str, topic: str) -> bool:
        """A group's alert belongs to the group's shard; a cluster-wide one to the shard named in its topic."""
        return self.shard.owns(group_id) if group_id else topic == self.scope

    def _update_and_evaluate(self, snapshot: ClusterSnapshot) -> dict[str, GroupFacts]:
        at = snapshot.taken_at
        for tp, offsets in snapshot.partitions.items():
            history = self.log_ends.setdefault(tp, [])
            history.append((offsets.log_end, at))
            if len(history) > HISTORY_POINTS * 2:
                self.log_ends[tp] = compute_compact_history(history, HISTORY_POINTS)
        status_rows, group_rows, facts = [], [], {}
        moves, starts = self._recent_group_events(at)
        self.lag_seconds = self._compute_lag_seconds(snapshot)
        for g in snapshot.groups.values():
            windows = []
            for tp, committed in g.committed.items():
                key = (g.group_id, tp)
                offsets = snapshot.partitions.get(tp)
                log_end = offsets.log_end if offsets else None
                if committed is not None and committed < 0:
                    committed = None
                with self._lock:
                    if key not in self.exact:
                        window = self.commits.setdefault(key, deque(maxlen=self.config.window))
                        last = window[-1] if window else None
                        for point in compute_sampled_commits([(at, committed, log_end)]):
                            if last is None or point.offset != last.offset:
                                window.append(point)
                            elif last.lag is None and point.lag is not None:
                                window[-1] = CommitPoint(last.offset, last.at, point.lag)
                    commits = tuple(self.commits.get(key, ()))
                lag = None if committed is None or log_end is None else max(0, log_end - committed)
                recent_ends = tuple(end for end, _ in self.log_ends.get(tp, [])[-self.config.window:])
                windows.append(PartitionWindow(tp, commits, recent_ends, lag))
            status = compute_group_rollup(g.group_id, [
                self._carry_over(g.group_id, evaluate_partition(w, at, self.config), g.committed.get(w.tp))
                for w in windows])
            self.last[g.group_id] = status
            parts = []
            for p in status.partitions:
                key = (g.group_id, p.tp)
                if self.statuses.get(key) != p.status:
                    self.statuses[key] = p.status
                    status_rows.append((g.group_id, p.tp, p.status))
                parts.append(PartitionFacts(p.tp, p.lag, self.lag_seconds.get(key), p.status, p.reason))
            if self.group_statuses.get(g.group_id) != (status.status, status.worst):
                self.group_statuses[g.group_id] = (status.status, status.worst)
                group_rows.append((g.group_id, status.status, status.worst, status.total_lag, status.complete))
            facts[g.group_id] = GroupFacts(g.group_id, g.state, len(g.members), tuple(parts),
                                           starts.get(g.group_id, ()), moves.get(g.group_id, ()))
        write_status_changes(self.engine, self.cluster, at, status_rows, group_rows)
        if not snapshot.errors:  # forget groups and partitions that are gone (deleted or expired)
            live = {(g.group_id, tp) for g in snapshot.groups.values() for tp in g.committed}
            with self._lock:
                for table in (self.commits, self.statuses, self.carried):
                    for key in [k for k in table if k not in live]:
                        del table[key]
                self.exact &= live
            for tp in [tp for tp in self.log_ends if tp not in snapshot.partitions]:
                del self.log_ends[tp]
        return facts

    def _compute_lag_seconds(self, snapshot: ClusterSnapshot) -> dict[tuple[str, TopicPartition], TimeLag | None]:
        """Interpolated for every partition; exact (record timestamp) for the K worst when a reader is set."""
        at = snapshot.taken_at
        out = {(g.group_id, tp): compute_time_lag(committed, self.log_ends.get(tp, []), at)
               for g in snapshot.groups.values() for tp, committed in g.committed.items()}
        if self.exact_reader is None or self.exact_top <= 0:
            return out
        worst = sorted(((lag.seconds, key) for key, lag in out.items() if lag is not None and lag.seconds > 0),
                       reverse=True)
        wanted: dict[TopicPartition, tuple[str, int]] = {}
        for _, (group, tp) in worst:
            if tp not in wanted and len(wanted) < self.exact_top:  # one offset per partition per read
                wanted[tp] = (group, snapshot.groups[group].committed[tp])
        try:
            stamps = self.exact_reader.fetch_timestamps({tp: offset for tp, (_, offset) in wanted.items()})
        except Exception as e:  # exact mode is a refinement: fall back to interpolation
            self.report(f"exact lag seconds unavailable this cycle ({type(e).__name__}); using interpolation")
            stamps = {}
        for tp, ts in stamps.items():
            out[(wanted[tp][0], tp)] = TimeLag(max(0.0, (at - ts) / 1000), exact=True)
        return out

    def _carry_over(self, group: str, judged: PartitionStatus, committed: int | None) -> PartitionStatus:
        carried = self.carried.get((group, judged.tp))
        if carried is None:
            return judged
        status, offset = carried
        if judged.reason.startswith("only ") and committed == offset and (judged.lag or 0) > self.config.allowed_lag:
            return replace(judged, status=status, reason=f"{status.name} before the restart; offset {offset} "
                                                         f"has not moved since")
        del self.carried[(group, judged.tp)]
        return judged

    def _recent_group_events(self, now: int) -> tuple[dict, dict]:
        """Coordinator moves and rebalance starts inside the widest window a rule asks about."""
        kinds = {r.kind for r in self.rules.rules}
        within = max((r.within_s for r in self.rules.rules if r.kind in ("rebalances", "coordinator_moved")),
                     default=0)
        moves: dict[str, tuple] = {}
        starts: dict[str, tuple] = {}
        since = now - int(within * 1000)
        if "coordinator_moved" in kinds:
            for e in read_events(self.engine, self.cluster, since=since):
                if e.kind is EventKind.COORDINATOR_MOVED:
                    moves[e.group_id] = moves.get(e.group_id, ()) + (
                        (e.at, f"{e.detail.get('from')} -> {e.detail.get('to')}"),)
        if "rebalances" in kinds:
            for row in read_rebalances(self.engine, self.cluster, since=since):
                starts[row.rebalance.group_id] = starts.get(row.rebalance.group_id, ()) + (row.rebalance.started_at,)
        return moves, starts


def read_group_health(engine: Engine, cluster: str, group: str, rules: RuleSet
                      ) -> tuple[int, GroupStatus, dict[TopicPartition, object]]:
    """(newest sample time, status, lag in seconds per partition) of a group, judged from the store (for the CLI)."""
    samples = {key: points for key, points in read_recent_commit_samples(
        engine, cluster, rules.evaluator.window * PRIME_SAMPLES_PER_COMMIT,
        shard=read_group_shard(engine, cluster, group)).items() if key[0] == group}
    if not samples:
        raise UnknownGroup(f"group {group!r} has no stored offsets for cluster {cluster!r}")
    at = max(points[-1][0] for points in samples.values())
    history: dict[TopicPartition, list] = {}
    for p in read_partition_history(engine, cluster, at - HISTORY_PRIME_MS, at + 1):
        history.setdefault(TopicPartition(p.topic, p.partition), []).append((p.log_end, p.at))
    windows, lag_s = [], {}
    for (_, tp), points in sorted(samples.items()):
        last_at, committed, log_end = points[-1]
        current = last_at == at
        lag = None if not current or committed is None or log_end is None else max(0, log_end - committed)
        windows.append(PartitionWindow(tp, compute_sampled_commits(points)[-rules.evaluator.window:],
                                       tuple(end for end, _ in history.get(tp, [])[-rules.evaluator.window:]), lag))
        lag_s[tp] = compute_time_lag(committed, history.get(tp, []), at) if current else None
    # Where the recent samples are too few to judge (a consumer stuck for long adds no new commit
    # points), the collector's own last judgement stands, as it does in the running collector.
    stored, _ = read_current_statuses(engine, cluster)
    parts = []
    for p in (evaluate_partition(w, at, rules.evaluator) for w in windows):
        kept = stored.get((group, p.tp))
        if p.reason.startswith("only ") and kept not in (None, p.status) and (p.lag or 0) > 0:
            p = replace(p, status=kept, reason=f"{kept.name} as last judged by the collector; {p.reason}")
        parts.append(p)
    return at, compute_group_rollup(group, parts), lag_s


def load_alerting(env: dict[str, str]) -> tuple[RuleSet, str | None]:
    """(rules, dashboard URL) from LAGMON_ALERTS_FILE, LAGMON_CHANNELS, LAGMON_DASHBOARD_URL; ConfigError if broken."""
    from monitor.alerts.notify import check_channels
    from monitor.alerts.rules import load_rules, parse_channels

    channels = parse_channels(env.get("LAGMON_CHANNELS", ""))
    rules = load_rules(env.get("LAGMON_ALERTS_FILE") or None, channels)
    check_channels(rules.channels)
    return rules, (env.get("LAGMON_DASHBOARD_URL") or None)
