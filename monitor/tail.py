"""The offsets-topic tail: a thread of the collector process reading __consumer_offsets.

Every session reads every partition from its beginning, as the group
coordinator does when it loads a partition: that rebuilds the exact committed
offsets of every group in memory, which lets the sampler skip its OffsetFetch
calls (one per group) once the tail has read past the end offsets taken at the
start of a cycle. Only records past the stored position per partition (or, on
the very first start, younger than the span) are stored, with the new
positions in the same transaction: no record is stored twice, none is skipped.
Errors are reported once and the session starts again, except a store that is
away: the session then waits for it with what it read, and reads on once
stored. Sampling never waits for the tail longer than `wait_s`. A static
collector shard's tail (the Store's shard) reads every record but keeps only its
own groups', with positions of its own; a coordinated collector's reads only the
partitions it holds, and starts a new session over them when they change.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from monitor.clock import wall_ms
from monitor.logs import get_logger
from monitor.models import (
    GroupSnapshot,
    GroupType,
    NotAuthorized,
    StoreUnavailable,
    TailMode,
    TopicPartition,
)
from monitor.offsets_topic.history import CommitRow, TailRecord, TailState, compute_commit_counts
from monitor.offsets_topic.log_groups import compute_snapshot
from monitor.ports import ShareTail
from monitor.shard import wait_for_partitions
from monitor.store import Store, store_errors
from monitor.store.offsets_tail import read_tail_positions, write_tail_update
from monitor.tail_sessions import FailureLog, run_sessions

NAMES_REFRESH_S = 10.0
log = get_logger("tail")
PAUSE_MAX_S = 2.0  # a cycle that never says it is done does not stop the tail for longer
STORE_RETRY_S = 1.0  # while the store is away, a read batch is offered to it again this often


@runtime_checkable
class OffsetsReader(Protocol):
    """One session's reader of __consumer_offsets (monitor.kafka.OffsetsTopicReader).

    It raises KafkaUnavailable when the topic cannot be read, NotAuthorized when for want of an ACL.
    """

    def open(self, start: Callable[[int], int | None], only: frozenset[int] | None = None) -> list[int]: ...

    def fetch_ends(self) -> dict[int, int]: ...

    def fetch_batch(self, max_records: int, timeout_s: float) -> tuple[list[TailRecord], dict[int, int], list[str]]: ...

    def close(self) -> None: ...


class OffsetsTail:
    """Owns one TailState at a time; `committed_when_caught_up` is what the sampler asks."""

    def __init__(
        self,
        open_reader: Callable[[], OffsetsReader],
        store: Store,
        cluster: str,
        *,
        span_ms: int,
        mode: TailMode = TailMode.AUTO,
        fetch_names: Callable[[], dict[str, str]] = dict,
        now_ms: Callable[[], int] = wall_ms,
        batch: int = 10_000,
        on_commits: Callable[[list[CommitRow]], None] | None = None,
        counts_commits: Callable[[str, str], bool] | None = None,
    ):
        self.open_reader = open_reader
        # e.g. the health engine: each stored batch's exact commits (tombstones among them) for its rules
        self.on_commits = on_commits
        # Commits counted for lagmon_consumergroup_offset_commits_total: those of the (group, topic)
        # pairs `counts_commits` wants (None: all), made since this tail was built.
        self.counts_commits = counts_commits
        self.counting_since_ms = now_ms()
        self._commit_counts: Counter[tuple[str, str]] = Counter()  # since the last take_commit_counts
        self.store = store
        self.cluster = cluster
        self.span_ms = span_ms
        self.mode = TailMode(mode)
        self.fetch_names = fetch_names
        self.now_ms = now_ms
        self.batch = batch
        self.partitions: list[int] = []
        self.disabled = False
        self.records_read = 0
        self.records_skipped = 0  # this session's records it could not decode or fold (each named in the log)
        self.caught_up_at: float | None = None  # monotonic time this session first reached the end
        self._state: TailState | None = None
        self._cond = threading.Condition()
        self._error = FailureLog(log)
        self._names_at = 0.0
        self._paused_until = 0.0  # monotonic time; see committed_when_caught_up
        self._waiting_for_store = False  # a read batch waits for the store (see _write)
        self._log_snapshots: dict[str, tuple[tuple, GroupSnapshot]] = {}  # group -> (its inputs, snapshot)
        self._session_version = -1  # of the store's shard when this session chose its partitions
        self._ends: dict[int, int] = {}  # the end offsets the last cycle asked about

    # -- what the sampler asks -------------------------------------------------------

    def committed_when_caught_up(
        self, ends: dict[int, int], groups: list[str], wait_s: float = 1.0
    ) -> dict[str, dict[TopicPartition, int]] | None:
        """Committed offsets of `groups` once every partition is read up to `ends`; None after `wait_s`.

        While a session is still catching up it answers at once: the cycle falls back to OffsetFetch.
        An answer pauses the tail until `resume` (or PAUSE_MAX_S): the rest of the cycle then has the
        interpreter lock to itself, and the records that arrive meanwhile wait in librdkafka's queue.
        """
        self._ends = ends
        if self._session_version != self.store.shard.version:  # a coordinated collector's partitions moved
            return None  # and this session has not read the new ones
        waits = self.caught_up_at is not None and not self._waiting_for_store
        committed = self._when_read(ends, wait_s if waits else 0.0, groups)
        if committed is not None:
            self._paused_until = time.monotonic() + PAUSE_MAX_S
        return committed

    def committed_as_read(self, groups: list[str]) -> dict[str, dict[TopicPartition, int]] | None:
        """Committed offsets of `groups` as far as this session has read (None before it has caught up).

        For a cycle whose end offsets Kafka did not answer (a leader moving): older by the tail's lag at
        most, and not OffsetFetch, which crashes librdkafka's admin client when the coordinator asked is
        stopping (docs/production.md). Pauses the tail like `committed_when_caught_up`.
        """
        if self._session_version != self.store.shard.version or self.caught_up_at is None or self._waiting_for_store:
            return None
        with self._cond:
            if self._state is None:
                return None
            self._paused_until = time.monotonic() + PAUSE_MAX_S
            return self._state.committed_for(groups)

    def log_group_snapshots(
        self, share: ShareTail | None, coordinator_of: Callable[[str], int | None]
    ) -> dict[str, GroupSnapshot] | None:
        """Share and streams groups as the records read so far describe them; None before the first catch-up.

        Asked right after `committed_when_caught_up` answered, while the tail is paused, so they
        are as of the same end offsets. A share group's lag needs the share-state tail: without
        it its partitions are "not known" rather than wrong. A group none of whose inputs changed
        since the last call is handed back as the same snapshot, unbuilt.
        """
        with self._cond:
            state = self._state
            if state is None or self.caught_up_at is None or self._session_version != self.store.shard.version:
                return None
            logged = state.log_groups
            names = {**logged.topic_names, **state.topic_names}
            out = {}
            for group, g in logged.groups.items():
                committed = state.committed.get(group, {})
                is_share = g.type is GroupType.SHARE
                key = (
                    logged.versions.get(group),
                    share.version_of(group) if is_share and share is not None else None,
                    coordinator_of(group),
                    len(names),
                    None if is_share else tuple(committed.items()),
                )
                cached = self._log_snapshots.get(group)
                if cached is None or cached[0] != key:
                    partitions = share.partitions_of(group, names) if is_share and share is not None else None
                    cached = self._log_snapshots[group] = (
                        key,
                        compute_snapshot(group, g, names, committed, partitions, key[2]),
                    )
                out[group] = cached[1]
            for gone in self._log_snapshots.keys() - out.keys():
                del self._log_snapshots[gone]
            return out

    def resume(self) -> None:
        """The cycle is done: decode on."""
        with self._cond:
            self._paused_until = 0.0
            self._cond.notify_all()

    def take_commit_counts(self) -> dict[tuple[str, str], int]:
        """Offset commits per (group, topic) read since the last call (the collector asks once a cycle)."""
        with self._cond:
            counts, self._commit_counts = self._commit_counts, Counter()
        return dict(counts)

    def positions(self) -> dict[int, int]:
        """The next offset this session reads per partition (what it has read, and stored or is storing)."""
        with self._cond:
            return {} if self._state is None else dict(self._state.read)

    def lag(self) -> int | None:
        """Records of its partitions this session has not read, as of the last cycle's end offsets (None: none)."""
        with self._cond:
            if self._state is None:
                return None
            read = self._state.read
            return sum(max(0, end - read.get(p, 0)) for p, end in self._ends.items() if p in self.partitions)

    def wait_until_read(self, ends: dict[int, int], timeout_s: float) -> bool:
        """True once every partition is read up to `ends` (for tests and benchmarks)."""
        return self._when_read(ends, timeout_s, []) is not None

    def _when_read(self, ends: dict[int, int], wait_s: float, groups: list[str]):
        deadline = time.monotonic() + wait_s
        with self._cond:
            while True:
                state = self._state
                if state is not None and ends and all(state.read.get(p, 0) >= end for p, end in ends.items()):
                    return state.committed_for(groups)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(remaining)

    # -- the thread ------------------------------------------------------------------

    @property
    def failing(self) -> bool:
        """Its newest session ended in a failure (said in the log) and none has read since."""
        return self._error.session_failed

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self.run, args=(stop,), name="offsets-tail", daemon=True)
        thread.start()
        return thread

    def run(self, stop: threading.Event) -> None:
        """Sessions until stopped (monitor.tail_sessions); in auto mode a topic we may not read turns the tail off."""
        run_sessions(
            "offsets-topic tail",
            self.open_reader,
            self._session,
            stop,
            self._error,
            refused=self._refused,
            ended=self._forget,
        )

    def _refused(self, e: NotAuthorized) -> bool:
        if self.mode is not TailMode.AUTO:
            return False
        self.disabled = True
        log.warning(
            "offsets-topic tail off: %s (needs Read on __consumer_offsets; LAGMON_OFFSETS_TOPIC=off silences this)", e
        )
        return True

    def _forget(self) -> None:
        """A session ended: what it held is not trustworthy until a new one has read to the end."""
        with self._cond:
            self._state = None
            self._cond.notify_all()

    def _session(self, reader: OffsetsReader, stop: threading.Event) -> float | None:
        shard = self.store.shard
        if shard.coordinated and not wait_for_partitions(shard, stop, math.inf):  # holding nothing, it reads nothing
            return None
        version, held = shard.version, shard.held if shard.coordinated else None
        stored = read_tail_positions(self.store.engine, self.cluster, shard.label)
        self.partitions = reader.open(lambda p: None, held)  # from the beginning: the state needs every record
        ends = reader.fetch_ends()
        reset = sorted(p for p, offset in stored.items() if offset > ends.get(p, offset))
        if reset:  # the topic was recreated (or the cluster replaced): its old positions mean nothing
            log.warning(
                "offsets-topic tail: __consumer_offsets partitions %s end before the stored "
                "positions (topic recreated?): storing them anew from the span",
                reset,
            )
            stored = {p: o for p, o in stored.items() if p not in reset}
        owns = shard.owns if shard.sharded and not shard.coordinated else None
        state = TailState(stored, since_ms=self.now_ms() - self.span_ms, owns=owns)
        self._refresh_names(state, force=True)
        started, ended = time.monotonic(), set()
        self.caught_up_at = None
        self.records_skipped = 0
        with self._cond:
            self._state, self._session_version = state, version
            self._log_snapshots = {}  # built from the last session's state, whose versions start again
        while not stop.is_set():
            with self._cond:
                while (pause := self._paused_until - time.monotonic()) > 0:
                    self._cond.wait(pause)
            with shard.working():
                if shard.version != version:  # a coordinated collector's partitions changed
                    log.info("offsets-topic tail: reading the partitions this collector holds now")
                    return 0.01
                if not self._batch(reader, state, ended, started, stop):
                    return None
        return None

    def _batch(self, reader: OffsetsReader, state: TailState, ended: set, started: float, stop) -> bool:
        """Read, fold and store one batch (False: stopped while the store was away)."""
        records, ends, errors = reader.fetch_batch(self.batch, 0.5)
        for message in errors:
            self._error(f"offsets-topic tail: {message}")
        with self._cond:
            update = state.apply(records)
            for partition, offset in ends.items():
                state.mark_end(partition, offset)
            self._cond.notify_all()
        if not self._write(update, stop):
            return False
        if update.commits:  # counted once stored: a failed write is read (and counted) again
            counts = compute_commit_counts(update, self.counting_since_ms, self.counts_commits)
            with self._cond:
                self._commit_counts.update(counts)
        if self.on_commits is not None and update.commits:
            self.on_commits(update.commits)
        self.records_read += len(records)
        self.records_skipped += update.failed
        for message in update.errors:
            self._error(f"offsets-topic tail skipped a record: {message}")
        if update.unknown_topic_ids:
            self._refresh_names(state)
        ended.update(ends)
        if self.caught_up_at is None and ended >= set(self.partitions):
            # every partition has reached its end (EOF) once; on a busy cluster a batch is never empty
            self.caught_up_at = time.monotonic()
            log.info(
                "offsets-topic tail caught up: %s records in %.1fs",
                f"{self.records_read:,}",
                self.caught_up_at - started,
                extra={"records": self.records_read, "seconds": round(self.caught_up_at - started, 3)},
            )
        if records or ends:
            self._error.healthy()
        return True

    def _write(self, update, stop: threading.Event) -> bool:
        """Store `update`, waiting while the store is away (False: stopped first).

        The session goes on from where it is: what was read stays read, and the sampler meanwhile
        asks OffsetFetch rather than wait for a tail that cannot move.
        """
        while True:
            try:
                with store_errors("offsets-topic tail: cannot store what it read"):
                    write_tail_update(self.store, self.cluster, update, self.now_ms())
            except StoreUnavailable as e:
                self._waiting_for_store = True
                self._error(f"{e} (waiting for the store; nothing is read again)")
                if stop.wait(STORE_RETRY_S):
                    return False
                continue
            if self._waiting_for_store:
                self._waiting_for_store = False
                log.info("offsets-topic tail: the store took what it read; reading on")
            return True

    def _refresh_names(self, state: TailState, force: bool = False) -> None:
        if not force and time.monotonic() - self._names_at < NAMES_REFRESH_S:
            return
        self._names_at = time.monotonic()
        try:
            state.topic_names.update(self.fetch_names())
        except Exception as e:
            self._error(f"offsets-topic tail: cannot name topic ids: {e}")


def build_offsets_tail(
    config: dict[str, str],
    store: Store,
    cluster: str,
    *,
    mode: TailMode,
    span_s: float,
    on_commits: Callable[[list[CommitRow]], None] | None = None,
    counts_commits: Callable[[str, str], bool] | None = None,
) -> OffsetsTail | None:
    """The tail for LAGMON_OFFSETS_TOPIC=`mode` (None when off), reading with the collector's client config."""
    if TailMode(mode) is TailMode.OFF:
        return None
    from monitor.kafka import OffsetsTopicReader, fetch_topic_names

    return OffsetsTail(
        lambda: OffsetsTopicReader(config),
        store,
        cluster,
        span_ms=int(span_s * 1000),
        mode=mode,
        fetch_names=lambda: fetch_topic_names(config),
        on_commits=on_commits,
        counts_commits=counts_commits,
    )
