"""The sampling loop: fetch a snapshot -> compute events and rebalances -> judge health -> store -> observers.

A cycle is everything the collector does for one snapshot: sampling Kafka, the
health step (monitor.health), writing it all in one transaction, and the
observers that read its report (alerts, then the exporter). The time it reports,
stores and exports is that whole cycle, with the sampling part beside it, and a
cycle longer than the interval is said once. The collector keeps running through
outages: a failed sample is recorded as an errored sample and reported once, a
cycle the store cannot take is kept and written when it is back
(docs/architecture.md section 3), and sampling resumes by itself. Retention runs
in its own thread so rolling up old rows never delays a cycle."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sqlalchemy.engine import Engine

from monitor.clock import wall_ms
from monitor.events import RebalanceTracker, compute_changes, compute_tracker
from monitor.health.report import HealthReport
from monitor.logs import format_utc, get_logger
from monitor.models import ClusterSnapshot, Event, GroupSnapshot, KafkaUnavailable, Rebalance, StoreUnavailable
from monitor.ports import Sampler, Tail
from monitor.store import RetentionPolicy, Store, apply_retention, read_clusters, store_errors
from monitor.store.health import StatusChanges
from monitor.store.last_answer import read_current_groups, read_last_answers
from monitor.store.rebalances import read_unsettled_starts
from monitor.store.writer import CycleWrite

if TYPE_CHECKING:
    from monitor.health.stage import HealthStage

RETENTION_EVERY_S = 60.0
DEFAULT_BACKLOG_BYTES = 256 << 20  # LAGMON_STORE_BACKLOG_MB
STOP_WAIT_S = 5.0  # for an owner's long-running parts together; still running after it, they end with the process
TAKE_OVER_CHECK_S = 0.1  # how often a coordinated collector between cycles looks whether it took groups over
# A group left out of whole answers is gone after two of them at least this far apart: a coordinator
# moving takes seconds to list its groups again, which is several cycles at a 1 s interval.
GONE_AFTER_MS = 10_000

log = get_logger("collector")


@dataclass(frozen=True)
class CycleResult:
    """What one cycle did, for the one-line report and for tests."""

    taken_at: int
    ok: bool
    duration_ms: int  # the whole cycle (so far, for an observer)
    groups: int = 0
    partitions: int = 0
    events: tuple[Event, ...] = ()
    rebalances_started: tuple[Rebalance, ...] = ()
    rebalances_completed: tuple[Rebalance, ...] = ()
    errors: tuple[str, ...] = ()
    offsets_from_tail: bool = False  # committed offsets came from the offsets-topic tail, not OffsetFetch
    sampling_ms: int | None = None  # the part of the cycle spent asking Kafka
    sample_id: int | None = None
    # (group, topic, offset commits) the offsets-topic tail read since the last cycle, failed or not
    offset_commits: tuple[tuple[str, str, int], ...] = ()
    store_error: str | None = None  # why this cycle is not stored yet (it is kept and written later)
    unstored_cycles: int = 0  # cycles kept in memory for the store, this one included
    tail_skipped: int = 0  # records of __consumer_offsets the tail's session could not decode or fold

    @property
    def stored(self) -> bool:
        return self.store_error is None


def describe_cycle(result: CycleResult) -> str:
    """One short line per cycle for the log (whose record carries the time; `cycle_fields` the figures)."""
    if not result.ok:
        return f"sample failed: {result.errors[0]}"
    line = (
        f"{result.groups} groups, {result.partitions} partitions "
        f"in {result.duration_ms / 1000:.2f}s (sampling {(result.sampling_ms or 0) / 1000:.2f}s)"
    )
    if result.offsets_from_tail:
        line += " (offsets from the tail)"
    if result.events:
        line += f"; {len(result.events)} events"
    if result.rebalances_completed:
        groups = sorted({r.group_id for r in result.rebalances_completed})
        line += f"; rebalance done in {', '.join(groups)}"
    if result.errors:
        line += f"; {len(result.errors)} partial errors, e.g. {result.errors[0]}"
    if not result.stored:
        line += f"; not stored yet ({result.unstored_cycles} cycles kept)"
    return line


def cycle_fields(result: CycleResult) -> dict:
    """A cycle's figures as fields of its log record (LAGMON_LOG_FORMAT=json shows them)."""
    return {
        "sample_time": format_utc(result.taken_at / 1000),
        "ok": result.ok,
        "cycle_seconds": result.duration_ms / 1000,
        "sampling_seconds": None if result.sampling_ms is None else result.sampling_ms / 1000,
        "groups": result.groups,
        "partitions": result.partitions,
        "events": len(result.events),
        "rebalances_completed": len(result.rebalances_completed),
        "partial_errors": len(result.errors) if result.ok else 0,
        "offsets_from_tail": result.offsets_from_tail,
        "unstored_cycles": result.unstored_cycles,
    }


def log_cycle(result: CycleResult, suffix: str = "") -> None:
    """The cycle's line: INFO, or ERROR for a failed sample."""
    level = logging.INFO if result.ok else logging.ERROR
    log.log(level, "%s%s", describe_cycle(result), suffix, extra=cycle_fields(result))


def compute_carried(prev: ClusterSnapshot | None, cur: ClusterSnapshot) -> ClusterSnapshot:
    """`cur` completed with what it could not see, as last seen: an unknown is never read as a change.

    - Share and streams groups while their tail catches up (ClusterSnapshot.unsampled) stay as last
      seen, so no event, alert or stored interval takes them for deleted.
    - When Kafka answered only in part (`cur.errors`: a broker restarting, a coordinator moving), a
      group it did not answer for keeps its last answer, marked `stale_since` the cycle that saw it,
      and a partition whose log offsets it did not answer for keeps its last ones (`stale_partitions`):
      no group disappears, no lag turns unknown and no alert resolves on a partial answer, and
      neither is stored or exported as new.
    - A group missing from an answer without errors is carried the same way: a coordinator taking over
      a partition leaves its groups out of ListGroups without an error until it has loaded them (seen
      in rolling restarts), so a group is gone only when answers without errors have left it out for
      GONE_AFTER_MS, and at least twice; answers with errors in between do not count.
    - A group whose coordinator this answer does not name (its __consumer_offsets partition between
      leaders) keeps the last one named: a move across that moment is then one move, old to new.
    """
    if prev is None:
        return cur
    placed = {
        group_id: replace(group, coordinator=before.coordinator)
        for group_id, group in cur.groups.items()
        if group.coordinator is None and (before := prev.groups.get(group_id)) and before.coordinator is not None
    }
    carried = {}
    for group_id, group in prev.groups.items():
        if group_id in cur.groups:
            continue
        if group.type in cur.unsampled:
            carried[group_id] = group
        elif cur.errors:
            carried[group_id] = _stale(group, prev.taken_at)
        elif group.left_out_since is None:
            carried[group_id] = replace(_stale(group, prev.taken_at), left_out_since=cur.taken_at)
        elif cur.taken_at - group.left_out_since < GONE_AFTER_MS:
            carried[group_id] = group
    groups = {**cur.groups, **placed, **carried}
    # the log offsets Kafka did not answer for, and those of carried groups, which were not asked for
    wanted = {tp for g in groups.values() for tp in g.committed}
    missing = {tp: prev.partitions[tp] for tp in wanted - cur.partitions.keys() if tp in prev.partitions}
    if not carried and not missing and not placed:
        return cur
    return replace(cur, groups=groups, partitions={**cur.partitions, **missing}, stale_partitions=frozenset(missing))


def _stale(group: GroupSnapshot, last_answered_at: int) -> GroupSnapshot:
    """`group` as Kafka last answered for it, marked so from the first cycle it did not."""
    return group if group.stale_since is not None else replace(group, stale_since=last_answered_at)


class Collector:
    """One cluster into one store. `poll_once` is a cycle; `run` repeats it until stopped."""

    def __init__(
        self,
        sampler: Sampler,
        store: Store,
        cluster: str,
        *,
        now_ms: Callable[[], int] = wall_ms,
        tail: Tail | None = None,
        health: HealthStage | None = None,
        observers: Sequence[Callable[[CycleResult, ClusterSnapshot | None, HealthReport | None], None]] = (),
        backlog_bytes: int = DEFAULT_BACKLOG_BYTES,
        carry_from_store: bool = True,
    ):
        """`carry_from_store`: a restarted collector carries the groups its first answer leaves out from
        the store's last answer (`_last_answers`); off, the answer is taken as it is."""
        self.sampler = sampler
        self.tail = tail  # an OffsetsTail (monitor.tail) running in its own thread, or None
        # The health step (monitor.health.HealthStage): judges each snapshot into a report and status changes.
        self.health = health
        # Called in order after the health step (snapshot and report None when the cycle failed):
        # the alert engine, then the exporter. One that raises is reported and skipped: it never stops sampling.
        self.observers = list(observers)
        self.store = store
        self.cluster = cluster
        self.now_ms = now_ms
        self.prev: ClusterSnapshot | None = None
        self.tracker: RebalanceTracker = compute_tracker(None)
        self.backlog = StoreBacklog(backlog_bytes)  # cycles the store could not take yet
        # A restarted collector must not report every group as new: its first cycle is a baseline.
        self._baseline = any(c.cluster == cluster for c in read_clusters(store.engine))
        self.carry_from_store = carry_from_store
        self.cycled = threading.Event()  # set after the first cycle of `run`
        self._version = store.shard.version  # of what the shard owns, as the last cycle found it

    def _sample_once(self) -> tuple[CycleResult, CycleWrite]:
        started = time.monotonic()
        taken_at = self.now_ms()
        try:
            snapshot = self.sampler.fetch_snapshot(self.now_ms)
        except KafkaUnavailable as e:
            sampling = int((time.monotonic() - started) * 1000)
            result = CycleResult(taken_at, False, sampling, errors=(str(e),), sampling_ms=sampling)
            return result, CycleWrite(self.cluster, taken_at, sampling, None, errors=(str(e),))
        restarted = self._baseline and self.prev is None
        if self.store.shard.version != self._version:  # a coordinated collector's groups moved
            self._version = self.store.shard.version
            if self.prev is None and not restarted:  # collectors starting together: a group another stored is known
                self.prev = ClusterSnapshot(self.cluster, snapshot.taken_at, {}, {})
            if self.prev is not None:
                self._take_over(snapshot)
        carried_from = self._last_answers(snapshot) if restarted and self.carry_from_store else self.prev
        snapshot = compute_carried(carried_from, snapshot)
        if restarted:
            events, started_rb, completed_rb = [], [], []
            self.tracker = self._resume_rebalances(compute_tracker(snapshot))
        else:
            events, self.tracker, started_rb, completed_rb = compute_changes(self.prev, snapshot, self.tracker)
        self.prev = snapshot
        result = CycleResult(
            snapshot.taken_at,
            True,
            0,
            len(snapshot.groups),
            sum(len(g.committed) for g in snapshot.groups.values()),
            tuple(events),
            tuple(started_rb),
            tuple(completed_rb),
            snapshot.errors,
            snapshot.offsets_from_tail,
            snapshot.duration_ms,
        )
        record = CycleWrite(
            self.cluster,
            snapshot.taken_at,
            snapshot.duration_ms,
            snapshot,
            events=tuple(events),
            rebalances=(*started_rb, *completed_rb),
        )
        return result, record

    def _take_over(self, cur: ClusterSnapshot) -> None:
        """The groups a coordinated collector owns changed: those it let go leave `prev` and the tracker
        without a word (they are not gone: another collector watches them now), and those it took
        continue from the store's last answers, as after a restart, so none is reported new or changed.
        With the store away they continue from this answer (`cur`): a change during the handover goes
        unseen, but no group is reported new for want of its history."""
        prev, owns, engine = self.prev, self.store.shard.owns, self.store.engine
        kept = {g: snap for g, snap in prev.groups.items() if owns(g)}
        try:
            with store_errors("cannot read the last answers of the groups taken over"):
                taken = sorted(g for g in read_current_groups(engine, self.cluster) if owns(g) and g not in kept)
                groups, partitions = read_last_answers(engine, self.cluster, taken) if taken else ({}, {})
        except StoreUnavailable as e:
            log.warning("%s: they continue from this cycle's answer", e)
            groups = {g: snap for g, snap in cur.groups.items() if g not in kept}
            wanted = {tp for snap in groups.values() for tp in snap.committed}
            partitions = {tp: offsets for tp, offsets in cur.partitions.items() if tp in wanted}
        opened = self._resume_rebalances(
            compute_tracker(ClusterSnapshot(self.cluster, prev.taken_at, groups, partitions))
        )
        self.tracker = RebalanceTracker(
            open={**{g: o for g, o in self.tracker.open.items() if g in kept}, **opened.open},
            stalled={**{g: m for g, m in self.tracker.stalled.items() if g in kept}, **opened.stalled},
        )
        self.prev = replace(prev, groups={**kept, **groups}, partitions={**prev.partitions, **partitions})
        log.info("now watching %d groups: %d kept, %d taken over", len(self.prev.groups), len(kept), len(groups))

    def _resume_rebalances(self, rebuilt: RebalanceTracker) -> RebalanceTracker:
        """A rebuilt tracker's open rebalances continue the rows a predecessor (the worker before a restart,
        the collector that held the group) stored as begun: the same start places them in the same row."""
        if not rebuilt.open:
            return rebuilt
        try:
            with store_errors("cannot read the rebalances in progress"):
                starts = read_unsettled_starts(self.store.engine, self.cluster, sorted(rebuilt.open))
        except StoreUnavailable as e:  # they start anew: a second row, the predecessor's left unsettled
            log.warning("%s", e)
            return rebuilt
        resumed = {
            g: replace(o, started_at=starts[g]) if starts.get(g, o.started_at) < o.started_at else o
            for g, o in rebuilt.open.items()
        }
        return replace(rebuilt, open=resumed)

    def _last_answers(self, cur: ClusterSnapshot) -> ClusterSnapshot | None:
        """A restarted collector's first cycle: the store's last answer for each group it holds as
        current and this answer leaves out (a coordinator still loading it, as in the rolling restart
        that crashed the last worker), carried like any other left out group rather than taken for gone."""
        engine = self.store.engine
        try:
            with store_errors("cannot read the last answers"):
                current = read_current_groups(engine, self.cluster)
                left_out = sorted(g for g in current - cur.groups.keys() if self.store.shard.owns(g))
                if not left_out:
                    return None
                groups, partitions = read_last_answers(engine, self.cluster, left_out)
        except StoreUnavailable as e:  # the answer is taken as it is; the write will wait for the store
            log.warning("%s", e)
            return None
        return ClusterSnapshot(self.cluster, cur.taken_at, groups, partitions)

    def _judge(self, snapshot: ClusterSnapshot) -> tuple[HealthReport | None, StatusChanges | None]:
        if self.health is None:
            return None, None
        try:
            return self.health.judge(snapshot)
        except Exception as e:  # a broken health step must not stop sampling either
            log.error("health failed (sampling goes on): %s: %s", type(e).__name__, e)
            log.debug("the health step's traceback", exc_info=True)
            return None, None

    def poll_once(self) -> CycleResult:
        """One whole cycle: sample, judge, store it all in one transaction, then the observers with the report.

        A cycle the store cannot take (StoreUnavailable) is kept and written before the next one, in
        order; the observers still see it (the exporter serves it), but the alert engine does not
        advance alerts on it (`CycleResult.stored`). A coordinated collector's partitions are let go
        only once the cycle under way is done (`KafkaShard.working`).
        """
        with self.store.shard.working():
            return self._cycle()

    def _cycle(self) -> CycleResult:
        started = time.monotonic()

        def so_far(result: CycleResult) -> CycleResult:
            return replace(result, duration_ms=int((time.monotonic() - started) * 1000))

        result, record = self._sample_once()
        if self.tail is not None:
            counts = self.tail.take_commit_counts()
            result = replace(
                result,
                offset_commits=tuple(sorted((g, t, n) for (g, t), n in counts.items())),
                tail_skipped=self.tail.records_skipped,
            )
        snapshot = record.snapshot
        report = None
        if snapshot is not None:
            report, statuses = self._judge(snapshot)
            record = replace(record, statuses=statuses)
        sample_id, store_error = self.backlog.write(self.store, record)
        result = replace(result, sample_id=sample_id, store_error=store_error, unstored_cycles=len(self.backlog.cycles))
        for observer in self.observers:
            try:
                observer(so_far(result), snapshot, report)
            except Exception as e:  # alerts must never break sampling
                name = getattr(observer, "__name__", type(observer).__name__)
                log.error("%s failed (sampling goes on): %s: %s", name, type(e).__name__, e)
                log.debug("%s's traceback", name, exc_info=True)
        result = so_far(result)
        if self.tail is not None:
            self.tail.resume()  # paused since it answered this cycle's committed offsets
        if sample_id is not None:
            try:
                self.store.write_cycle_time(sample_id, result.duration_ms, result.sampling_ms)
            except Exception as e:  # the cycle is stored; only its whole time is missing
                log.debug("cycle time not stored: %s: %s", type(e).__name__, e)
        return result

    def _wait(self, stop: threading.Event, until: float) -> None:
        """Until the next cycle is due (monotonic `until`), or sooner when a coordinated collector's groups
        moved since its last cycle: those it took over are watched by nobody until it cycles."""
        shard = self.store.shard
        if not shard.coordinated:
            stop.wait(max(0.0, until - time.monotonic()))
            return
        while shard.version == self._version and (left := until - time.monotonic()) > 0:
            if stop.wait(min(left, TAKE_OVER_CHECK_S)):
                return

    def run(self, interval_s: float, stop: threading.Event) -> None:
        """Cycle every `interval_s` until `stop` is set, logging each; say when Kafka goes away and comes back.

        The loop runs in the calling thread; `cycled` is set once the first cycle is done (the tail
        starts then: monitor.wiring starts and joins the background parts).
        """
        down_since: float | None = None
        overrun = False
        next_at = time.monotonic()
        while not stop.is_set():
            result = self.poll_once()
            self.cycled.set()
            if result.duration_ms > interval_s * 1000 and not overrun:
                log.warning(
                    "cycle took %.2fs, longer than the %gs interval (sampling %.2fs of it): the next cycles start late",
                    result.duration_ms / 1000,
                    interval_s,
                    (result.sampling_ms or 0) / 1000,
                    extra=cycle_fields(result),
                )
            overrun = result.duration_ms > interval_s * 1000
            if result.ok and down_since is not None:
                log.info("Kafka reachable again after %.0fs", time.monotonic() - down_since)
                down_since = None
            if not result.ok and down_since is None:
                down_since = time.monotonic()
                log_cycle(result, f" (retrying every {interval_s:g}s)")
            elif result.ok:
                log_cycle(result)
            next_at += interval_s
            self._wait(stop, next_at)
            next_at = max(next_at, time.monotonic())  # after a slow cycle, do not burst to catch up
        if self.backlog.cycles and self.backlog.flush(self.store)[1] is not None:
            log.error("stopping with %d cycles the store could not take: they are lost", len(self.backlog.cycles))


class StoreBacklog:
    """The cycles the store could not take yet, written oldest first once it is back.

    Bounded by an estimate of their size: past it the oldest are dropped (and counted), so an
    outage costs the oldest history, never the collector. The outage is said once when it
    starts and once when it ends.
    """

    def __init__(self, limit_bytes: int):
        self.limit_bytes = limit_bytes
        self.cycles: deque[CycleWrite] = deque()
        self.bytes = 0
        self.dropped = 0  # in this outage
        self._down_since: float | None = None
        self._why = ""  # the first error of this outage

    def write(self, store: Store, cycle: CycleWrite) -> tuple[int | None, str | None]:
        """Write the kept cycles, then `cycle`: (its sample id, None), or (None, why) and it is kept."""
        self._keep(cycle)
        return self.flush(store)

    def flush(self, store: Store) -> tuple[int | None, str | None]:
        """Write the kept cycles, oldest first: (the newest's sample id, None), or (None, why)."""
        sample_id = None
        try:
            if self._down_since is not None and self.cycles:
                store.write_cycle(self._outage_marker())
            while self.cycles:
                sample_id = store.write_cycle(self.cycles[0])
                self.bytes -= self.cycles.popleft().estimate_bytes()
        except StoreUnavailable as e:
            if self._down_since is None:
                self._down_since, self._why = time.monotonic(), str(e)
                log.error(
                    "store unavailable: %s; keeping cycles in memory (up to %d MB) and retrying every cycle",
                    e,
                    self.limit_bytes >> 20,
                )
            return None, str(e)
        if self._down_since is not None:
            log.info(
                "store back after %.0fs: wrote the cycles kept meanwhile%s",
                time.monotonic() - self._down_since,
                f" ({self.dropped} oldest dropped over the {self.limit_bytes >> 20} MB limit)" if self.dropped else "",
            )
            self._down_since, self.dropped = None, 0
        return sample_id, None

    def _outage_marker(self) -> CycleWrite:
        """A failed sample at the outage's start, written before the kept cycles: the Health page lists it."""
        first = self.cycles[0]
        lasted_ms = int((time.monotonic() - self._down_since) * 1000)
        kept = f"{len(self.cycles)} cycles kept" + (f", {self.dropped} older ones dropped" if self.dropped else "")
        why = f"the store was unavailable for {lasted_ms / 1000:.0f}s ({self._why}): {kept} and written afterwards"
        return CycleWrite(first.cluster, first.taken_at, lasted_ms, None, errors=(why,))

    def _keep(self, cycle: CycleWrite) -> None:
        self.cycles.append(cycle)
        self.bytes += cycle.estimate_bytes()
        while self.bytes > self.limit_bytes and len(self.cycles) > 1:
            self.bytes -= self.cycles.popleft().estimate_bytes()
            self.dropped += 1
            if self.dropped == 1:
                log.warning("store backlog full (%d MB): dropping the oldest kept cycles", self.limit_bytes >> 20)


class Retention:
    """Rolls raw rows up and old ones away every RETENTION_EVERY_S (monitor.store), in a thread of its own."""

    def __init__(
        self,
        engine: Engine,
        cluster: str,
        policy: RetentionPolicy,
        now_ms: Callable[[], int],
        leads: Callable[[], bool] = lambda: True,
    ):
        self.engine = engine
        self.cluster = cluster
        self.policy = policy
        self.now_ms = now_ms
        self.leads = leads  # of a cluster's collectors only one runs it (static shard 1, or partition 0's holder)

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self._loop, args=(stop,), name="retention", daemon=True)
        thread.start()
        return thread

    def _loop(self, stop: threading.Event) -> None:
        while not stop.wait(RETENTION_EVERY_S):
            if not self.leads():
                continue
            try:
                apply_retention(self.engine, self.cluster, self.now_ms(), self.policy)
            except Exception as e:  # retention must never take the collector down
                log.warning("retention failed (will retry): %s", e)
