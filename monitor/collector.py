"""The sampling loop: fetch a snapshot -> compute events and rebalances -> write them -> judge health -> observers.

A cycle is everything the collector does for one snapshot: sampling Kafka,
writing the store, the health step (monitor.health) and the observers that read
its report (alerts, then the exporter). The time it reports, stores and exports
is that whole cycle, with the sampling part beside it, and a cycle longer than
the interval is said once. The collector keeps running through outages: a
failed cycle is recorded as an errored sample and reported once, and sampling
resumes by itself. Retention runs in its own thread so rolling up old rows
never delays a cycle.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from sqlalchemy.engine import Engine

from monitor.events import RebalanceTracker, compute_changes, compute_tracker
from monitor.health.report import HealthReport
from monitor.logs import format_utc, get_logger
from monitor.models import ClusterSnapshot, Event, KafkaUnavailable, Rebalance
from monitor.ports import Sampler, Tail
from monitor.stopping import join_all
from monitor.store import RetentionPolicy, Store, apply_retention, read_clusters

RETENTION_EVERY_S = 60.0
STOP_WAIT_S = 5.0  # for an owner's long-running parts together; still running after it, they end with the process

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
    }


def log_cycle(result: CycleResult, suffix: str = "") -> None:
    """The cycle's line: INFO, or ERROR for a failed sample."""
    level = logging.INFO if result.ok else logging.ERROR
    log.log(level, "%s%s", describe_cycle(result), suffix, extra=cycle_fields(result))


def compute_carried(prev: ClusterSnapshot | None, cur: ClusterSnapshot) -> ClusterSnapshot:
    """`cur` with the previous cycle's groups of the types it could not see (ClusterSnapshot.unsampled).

    A share or streams group does not vanish for the cycles its tail takes to catch up:
    it stays as last seen, so no event, alert or stored interval takes it for deleted.
    """
    if prev is None or not cur.unsampled:
        return cur
    carried = {g: s for g, s in prev.groups.items() if s.type in cur.unsampled and g not in cur.groups}
    return replace(cur, groups={**cur.groups, **carried}) if carried else cur


class Collector:
    """One cluster into one store. `poll_once` is a cycle; `run` repeats it until stopped."""

    def __init__(
        self,
        sampler: Sampler,
        store: Store,
        cluster: str,
        *,
        now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        retention: RetentionPolicy | None = None,
        tail: Tail | None = None,
        health: Callable[[ClusterSnapshot], HealthReport] | None = None,
        observers: Sequence[Callable[[CycleResult, ClusterSnapshot | None, HealthReport | None], None]] = (),
    ):
        self.sampler = sampler
        self.tail = tail  # an OffsetsTail (monitor.tail) run in its own thread by `run`, or None
        # The health step (monitor.health.HealthStage): judges each snapshot into a report.
        self.health = health
        # Called in order after the health step (snapshot and report None when the cycle failed):
        # the alert engine, then the exporter. One that raises is reported and skipped: it never stops sampling.
        self.observers = list(observers)
        self.store = store
        self.cluster = cluster
        self.now_ms = now_ms
        self.retention = retention or RetentionPolicy()
        self.prev: ClusterSnapshot | None = None
        self.tracker: RebalanceTracker = compute_tracker(None)
        # A restarted collector must not report every group as new: its first cycle is a baseline.
        self._baseline = any(c.cluster == cluster for c in read_clusters(store.engine))

    def _sample_once(self) -> CycleResult:
        started = time.monotonic()
        taken_at = self.now_ms()
        try:
            snapshot = self.sampler.fetch_snapshot(self.now_ms)
        except KafkaUnavailable as e:
            sampling = int((time.monotonic() - started) * 1000)
            sample_id = self.store.write_sample_error(self.cluster, taken_at, sampling, [str(e)])
            return CycleResult(taken_at, False, sampling, errors=(str(e),), sampling_ms=sampling, sample_id=sample_id)
        snapshot = compute_carried(self.prev, snapshot)
        if self._baseline and self.prev is None:
            events, started_rb, completed_rb = [], [], []
            self.tracker = compute_tracker(snapshot)
        else:
            events, self.tracker, started_rb, completed_rb = compute_changes(self.prev, snapshot, self.tracker)
        sample_id = self.store.write_snapshot(snapshot)
        self.store.write_events(self.cluster, events)
        self.store.write_rebalances(self.cluster, [*started_rb, *completed_rb])
        self.prev = snapshot
        return CycleResult(
            snapshot.taken_at,
            True,
            0,
            len(snapshot.groups),
            sum(len(g.committed) for g in snapshot.groups.values()),
            tuple(events),
            tuple(started_rb),
            tuple(completed_rb),
            snapshot.errors,
            self.sampler.offsets_from_tail,
            snapshot.duration_ms,
            sample_id,
        )

    def poll_once(self) -> CycleResult:
        """One whole cycle: sample and store, the health step, then the observers with its report."""
        started = time.monotonic()

        def so_far(result: CycleResult) -> CycleResult:
            return replace(result, duration_ms=int((time.monotonic() - started) * 1000))

        result = self._sample_once()
        if self.tail is not None:
            counts = self.tail.take_commit_counts()
            result = replace(result, offset_commits=tuple(sorted((g, t, n) for (g, t), n in counts.items())))
        snapshot = self.prev if result.ok else None
        report = None
        if snapshot is not None and self.health is not None:
            try:
                report = self.health(snapshot)
            except Exception as e:  # a broken health step must not stop sampling either
                log.error("health failed (sampling goes on): %s: %s", type(e).__name__, e)
                log.debug("the health step's traceback", exc_info=True)
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
        if result.sample_id is not None:
            self.store.write_cycle_time(result.sample_id, result.duration_ms, result.sampling_ms)
        return result

    def run(self, interval_s: float, stop: threading.Event) -> None:
        """Cycle every `interval_s` until `stop` is set, logging each; say when Kafka goes away and comes back.

        The loop runs in the calling thread; the parts it starts with `stop` (retention, the tail) are
        joined before it returns. Of several collector shards only shard 1 runs retention (for the
        whole cluster), so it runs once.
        """
        threads = []
        if self.store.shard.leads:
            threads.append(Retention(self.store.engine, self.cluster, self.retention, self.now_ms).start(stop))
        tail_started = False
        down_since: float | None = None
        overrun = False
        next_at = time.monotonic()
        while not stop.is_set():
            result = self.poll_once()
            if not tail_started and self.tail is not None:
                # After the first cycle: that one reads offsets with OffsetFetch anyway (a new tail has
                # not read to the end), and a tail decoding the whole topic meanwhile would take half the
                # interpreter from it (a restart's first cycle, 20,000 group-partitions: 2.2 s, 1.1 s without).
                threads.append(self.tail.start(stop))
                tail_started = True
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
            stop.wait(max(0.0, next_at - time.monotonic()))
            next_at = max(next_at, time.monotonic())  # after a slow cycle, do not burst to catch up
        join_all(threads, STOP_WAIT_S)


class Retention:
    """Rolls raw rows up and old ones away every RETENTION_EVERY_S (monitor.store), in a thread of its own."""

    def __init__(self, engine: Engine, cluster: str, policy: RetentionPolicy, now_ms: Callable[[], int]):
        self.engine = engine
        self.cluster = cluster
        self.policy = policy
        self.now_ms = now_ms

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self._loop, args=(stop,), name="retention", daemon=True)
        thread.start()
        return thread

    def _loop(self, stop: threading.Event) -> None:
        while not stop.wait(RETENTION_EVERY_S):
            try:
                apply_retention(self.engine, self.cluster, self.now_ms(), self.policy)
            except Exception as e:  # retention must never take the collector down
                log.warning("retention failed (will retry): %s", e)
