"""The health engine: the one owner of commit windows, statuses and lag seconds (no I/O).

Each cycle `observe` takes the collector's snapshot (and the exact commits the
offsets-topic tail queued with `record_commits`, a batch at a time) and returns a HealthReport.
Its work follows what changed: a group is judged again only when its committed
offsets, its state or members, or the log end of one of its partitions moved,
or when one of its verdicts runs on the clock (rules 2 and 4 of
monitor.health.rules); every other group keeps last cycle's entry as it is.
Lag seconds are kept as clocks (monitor.lag.LagClock) that change only when the
offsets do. The state can be exported and restored, so a restarted collector
judges on the windows it had, not on an empty history (docs/health.md).
"""

from __future__ import annotations

import base64
import heapq
import sys
from array import array
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence

from monitor.health.report import GroupHealth, HealthReport, PartitionHealth, ShareHealth
from monitor.health.rules import (
    LAG,
    NO_LAG,
    HealthSettings,
    PartitionWindow,
    Runs,
    compute_group_status,
    compute_runs,
    compute_sampled_step,
    compute_share_health,
    extend_runs,
    judge_partition,
)
from monitor.lag import LagClock, LogEndHistory, compute_doubt, compute_exact_clock, compute_lag
from monitor.logs import get_logger
from monitor.models import ClusterSnapshot, GroupSnapshot, PartitionOffsets, SharePartition, TopicPartition, intern_tp
from monitor.ports import RecordTimestamps

log = get_logger("health")
STATE_HEADER = "lagmon-health-state"
STATE_VERSION = 3  # 2: windows packed as the bytes of their arrays; 3: one record at a time
# (group, topic, partition, offset, committed_at, ...): a tail's CommitRow (monitor.offsets_topic.history);
# an offset below 0 is a tombstone
ExactCommit = tuple
# NamedTuples built with tuple's own constructor where 20,000 are made a cycle: namedtuple's
# __new__ is Python code, and its frames were a tenth of judging (py-spy, case (b))
_new_tuple = tuple.__new__


class _Partition:
    """One group-partition's memory between cycles."""

    __slots__ = ("clock", "commits", "committed", "exact", "runs")

    def __init__(self, exact: bool = False):
        self.commits = array("q")  # the window, oldest first (monitor.health.rules.Window)
        self.runs: Runs | None = None  # the window's runs while every lag in it is known, else None
        self.committed: int | None = -1  # as last judged (-1: never judged, so the clock is computed)
        self.clock: LagClock | None = None
        self.exact = exact  # fed by the offsets-topic tail: sampled offsets no longer add points

    def add(self, offset: int, at: int, lag: int | None, size: int, allowed_lag: int) -> None:
        """Append a commit to the window, extending its runs (counted afresh only after an unknown lag)."""
        c = self.commits
        before = (c[-3], c[-2], c[-1]) if c else None
        c.extend((offset, at, NO_LAG if lag is None else lag))
        if len(c) > 3 * size:
            del c[:3]
        if lag is None:
            self.runs = None
        elif self.runs is not None or before is None:
            self.runs = extend_runs(self.runs, before, (offset, at, lag), allowed_lag)
        else:
            self._recount(allowed_lag)

    def add_sampled(self, committed: int, at: int, lag: int | None, size: int, allowed_lag: int) -> None:
        """A sampled committed offset (monitor.health.rules.compute_sampled_step)."""
        c = self.commits
        last = (c[-3], c[-2], None if c[-1] == NO_LAG else c[-1]) if c else None
        step = compute_sampled_step(last, committed, at, lag)
        if step is None:
            return
        point, replaces = step
        if replaces:
            c[-3:] = array("q", (point[0], point[1], NO_LAG if point[LAG] is None else point[LAG]))
            self._recount(allowed_lag)
        else:
            self.add(*point, size, allowed_lag)

    def _recount(self, allowed_lag: int) -> None:
        known = NO_LAG not in self.commits[LAG::3]
        self.runs = compute_runs(self.commits, allowed_lag) if known else None


class HealthEngine:
    def __init__(
        self,
        cluster: str,
        settings: HealthSettings = HealthSettings(),
        *,
        exact_reader: RecordTimestamps | None = None,
        exact_top: int = 0,
    ):
        self.cluster = cluster
        self.settings = settings
        self.exact_reader = exact_reader  # reads record timestamps at committed offsets (monitor.kafka)
        self.exact_top = exact_top
        self._parts: dict[str, dict[TopicPartition, _Partition]] = {}
        self._histories: dict[TopicPartition, LogEndHistory] = {}
        self._shares: dict[str, dict[TopicPartition, ShareHealth]] = {}  # share group -> its share-partitions
        self._seen: dict[str, tuple] = {}  # group -> (committed, state, members, share) as last judged
        self._groups: dict[str, GroupHealth] = {}
        self._ticking: set[str] = set()  # groups with a verdict that runs on the clock
        self._inbox: deque[Sequence[ExactCommit]] = deque()  # batches of exact commits from the tail's thread

    # -- inputs -----------------------------------------------------------------------------

    def record_commits(self, commits: Sequence[ExactCommit]) -> None:
        """A batch of exact commits from the offsets-topic tail (any thread); they join the windows at the
        next cycle. Handed over as the tail stored them, one list a batch: 20,000 a second come this way."""
        if commits:
            self._inbox.append(commits)

    def groups(self) -> set[str]:
        """Every group the engine holds anything of."""
        return self._groups.keys() | self._parts.keys() | self._shares.keys()

    def knows(self, group_id: str) -> bool:
        return group_id in self._groups or group_id in self._parts

    def forget(self, group_ids) -> None:
        """Drop groups without reporting them removed (another collector judges them now)."""
        for group_id in group_ids:
            for table in (self._groups, self._seen, self._parts, self._shares):
                table.pop(group_id, None)
            self._ticking.discard(group_id)

    def observe(self, snapshot: ClusterSnapshot) -> HealthReport:
        at = snapshot.taken_at
        moved = self._add_log_ends(snapshot.partitions, snapshot.log_ends_at)
        dirty = self._apply_exact_commits()
        exact = self._fetch_exact_clocks(snapshot)
        dirty.update(group for group, _ in exact)
        changed = set()
        for group_id, g in snapshot.groups.items():
            seen = self._seen.get(group_id)
            self._seen[group_id] = (g.committed, g.state, g.members, g.share)
            if (
                seen is not None
                and group_id not in dirty
                and group_id not in self._ticking
                and seen[0] == g.committed
                and seen[1] is g.state
                and seen[2] == g.members
                and seen[3] == g.share
                and moved.isdisjoint(g.committed)
            ):
                continue
            entry = self._judge(g, snapshot.partitions, at, moved, exact)
            if entry != self._groups.get(group_id):
                self._groups[group_id] = entry
                changed.add(group_id)
        removed = frozenset()
        if not snapshot.errors and not snapshot.unsampled:  # forget groups and partitions that are gone
            removed = frozenset(g for g in self._groups if g not in snapshot.groups)
            for group_id in removed:
                for table in (self._groups, self._seen):
                    table.pop(group_id, None)
                self._ticking.discard(group_id)
            # ... and windows the tail filled for groups this collector does not watch (allow/deny lists)
            for group_id in [g for g in self._parts if g not in snapshot.groups]:
                del self._parts[group_id]
            for group_id in [g for g in self._shares if g not in snapshot.groups]:  # gone, or restored unwatched
                del self._shares[group_id]
            for tp in [tp for tp in self._histories if tp not in snapshot.partitions]:
                del self._histories[tp]
        return HealthReport(self.cluster, at, dict(self._groups), frozenset(changed), removed)

    # -- one group --------------------------------------------------------------------------

    def _judge(
        self,
        g: GroupSnapshot,
        partitions: Mapping[TopicPartition, PartitionOffsets],
        at: int,
        moved: set[TopicPartition],
        exact: dict,
    ) -> GroupHealth:
        settings, histories, group_id = self.settings, self._histories, g.group_id
        size, allowed_lag = settings.window, settings.allowed_lag
        before = self._parts.get(group_id, {})
        kept: dict[TopicPartition, _Partition] = {}
        healths = []
        ticking = False
        for tp, committed in g.committed.items():
            if committed is not None and committed < 0:
                committed = None
            p = before.get(tp)
            if p is None:
                p = _Partition()
            kept[tp] = p
            offsets = partitions.get(tp)
            log_end = None if offsets is None else offsets.log_end
            lag = compute_lag(committed, log_end)
            if committed is not None and not p.exact:
                p.add_sampled(committed, at, lag, size, allowed_lag)
            history = histories.get(tp)
            if committed != p.committed or tp in moved:
                p.committed = committed
                p.clock = None if history is None else history.clock(committed)
            clock = exact.get((group_id, tp), p.clock) if exact else p.clock
            since = None if clock is None else clock.since
            low_end = None if history is None else history.low_end(size)
            verdict = judge_partition(
                _new_tuple(PartitionWindow, (tp, p.commits, lag, since, low_end, p.runs)), at, settings
            )
            if verdict.clocked:
                ticking = True
            complete = min(1.0, verdict.known / size)
            healths.append(
                _new_tuple(
                    PartitionHealth, (tp, committed, log_end, lag, clock, verdict.status, verdict.reason, complete)
                )
            )
        self._parts[group_id] = kept
        if ticking:
            self._ticking.add(group_id)
        else:
            self._ticking.discard(group_id)
        share: tuple[ShareHealth, ...] = ()
        if g.share is not None:
            known = self._shares.get(group_id, {})
            shares = {tp: compute_share_health(tp, sp, known.get(tp), at) for tp, sp in sorted(g.share.items())}
            self._shares[group_id] = shares
            share = tuple(shares.values())
        return compute_group_health(g, healths, share)

    # -- what feeds the windows -------------------------------------------------------------

    def _add_log_ends(self, partitions: Mapping[TopicPartition, PartitionOffsets], at: int) -> set[TopicPartition]:
        """Extend each partition's log-end history; the partitions whose newest log end moved."""
        moved = set()
        histories = self._histories
        for tp, offsets in partitions.items():
            history = histories.get(tp)
            if history is None:
                history = histories[tp] = LogEndHistory()
            if history.add(offsets.log_end, at):
                moved.add(tp)
        return moved

    def _apply_exact_commits(self) -> set[str]:
        """Move the tail's commits into the windows; the groups they touched."""
        touched = set()
        inbox, size, allowed_lag = self._inbox, self.settings.window, self.settings.allowed_lag
        parts, histories = self._parts, self._histories
        group_id, group = None, {}
        while inbox:
            for commit in inbox.popleft():
                offset = commit[3]
                if offset < 0:  # a tombstone: the offset was deleted, nothing was consumed
                    continue
                if commit[0] != group_id:  # a group's partitions come together, as they were committed
                    group_id = commit[0]
                    group = parts.get(group_id) or parts.setdefault(group_id, {})
                    touched.add(group_id)
                tp, at = intern_tp(commit[1], commit[2]), commit[4]
                p = group.get(tp)
                if p is None or not p.exact:  # exact commits replace the sampled window from now on
                    p = group[tp] = _Partition(exact=True)
                history = histories.get(tp)
                p.add(
                    offset, at, None if history is None else compute_lag(offset, history.end_at(at)), size, allowed_lag
                )
        return touched

    def _fetch_exact_clocks(self, snapshot: ClusterSnapshot) -> dict[tuple[str, TopicPartition], LagClock]:
        """Record timestamps at the committed offsets of the `exact_top` partitions whose interpolated lag
        seconds are least sure, relative to the lag (bounds first): where a read improves the answer most."""
        if self.exact_reader is None or self.exact_top <= 0:
            return {}
        at, histories = snapshot.taken_at, self._histories
        unsure = heapq.nlargest(  # by the interpolated clocks of this cycle's committed offsets
            self.exact_top * 4,
            (
                (compute_doubt(clock, at), group_id, tp, offset, clock)  # (group, tp) unique: clocks not compared
                for group_id, g in snapshot.groups.items()
                for tp, offset in g.committed.items()
                if offset is not None
                and offset >= 0
                and (history := histories.get(tp)) is not None
                and (clock := history.clock(offset)).since is not None
            ),
        )
        wanted: dict[TopicPartition, tuple[str, int, LagClock]] = {}
        for doubt, group_id, tp, offset, clock in unsure:
            if doubt > 0 and tp not in wanted and len(wanted) < self.exact_top:
                wanted[tp] = (group_id, offset, clock)  # one offset per partition per read
        if not wanted:
            return {}
        try:
            stamps = self.exact_reader.fetch_timestamps({tp: offset for tp, (_, offset, _) in wanted.items()})
        except Exception as e:  # exact mode is a refinement: fall back to interpolation
            log.warning("exact lag seconds unavailable this cycle (%s); using interpolation", type(e).__name__)
            return {}
        clocks = {}
        for tp, record in stamps.items():
            group_id, _, interpolated = wanted[tp]
            if (clock := compute_exact_clock(record, interpolated)) is not None:
                clocks[(group_id, tp)] = clock
        return clocks

    # -- restart ----------------------------------------------------------------------------

    def export_state(self) -> Iterator[list]:
        """The state as records, a header first, made one at a time: the whole state as one object (then
        one JSON string) of a busy collector took 27 MB above its steady memory at every save.
        Windows are their arrays' bytes in base64, log-end histories plain lists, and each
        share-partition's archived count with when it last rose (so a restart neither forgets a
        rise nor sees one anew)."""
        yield [STATE_HEADER, STATE_VERSION, sys.byteorder]
        for group_id, parts in self._parts.items():
            for tp, p in parts.items():
                if p.commits:
                    yield ["w", group_id, tp.topic, tp.partition, int(p.exact), base64.b64encode(p.commits).decode()]
        for tp, h in self._histories.items():
            yield ["h", tp.topic, tp.partition, h.ends, h.ats]
        for group_id, shares in self._shares.items():
            for tp, sh in shares.items():
                yield [
                    "s",
                    group_id,
                    tp.topic,
                    tp.partition,
                    sh.archived,
                    sh.archived_rose_at,
                    sh.archived_rise,
                    sh.archived_total,
                ]

    def restore_state(self, records: Iterable[list]) -> bool:
        """Continue from `export_state`'s records; False (nothing restored) for another version or machine.
        Nothing is taken unless every record was read."""
        records = iter(records)
        if next(records, None) != [STATE_HEADER, STATE_VERSION, sys.byteorder]:
            return False
        parts: dict[str, dict[TopicPartition, _Partition]] = {}
        histories: dict[TopicPartition, LogEndHistory] = {}
        shares: dict[str, dict[TopicPartition, ShareHealth]] = {}
        size, allowed_lag = self.settings.window, self.settings.allowed_lag
        for kind, *fields in records:
            if kind == "w":
                group_id, topic, partition, exact, packed = fields
                p = parts.setdefault(group_id, {})[intern_tp(topic, partition)] = _Partition(bool(exact))
                p.commits.frombytes(base64.b64decode(packed))
                del p.commits[: -3 * size]  # the window setting may have shrunk meanwhile
                p._recount(allowed_lag)
            elif kind == "h":
                topic, partition, ends, ats = fields
                histories[intern_tp(topic, partition)] = LogEndHistory(list(zip(ends, ats, strict=True)))
            elif kind == "s":  # only the archived count and its rises carry on (compute_share_health's `before`)
                group_id, topic, partition, archived, rose_at, rise, total = fields
                tp = intern_tp(topic, partition)
                shares.setdefault(group_id, {})[tp] = ShareHealth(tp, -1, 0, archived, 0, 0, rose_at, rise, total)
        self._parts.update(parts)
        self._histories.update(histories)
        self._shares.update(shares)
        return True

    def replay(
        self,
        samples: Mapping[tuple[str, TopicPartition], list[tuple[int, int | None, int | None]]],
        histories: Mapping[TopicPartition, list[tuple[int, int]]],
    ) -> None:
        """Add stored (taken_at, committed, log_end) samples and (log_end, at) points, oldest first: the cycles
        since the state was saved (or, with no saved state, the newest stored ones)."""
        size = self.settings.window
        for (group_id, tp), points in samples.items():
            p = self._parts.setdefault(group_id, {}).setdefault(tp, _Partition())
            if not p.exact:
                for at, committed, log_end in points:
                    if committed is not None and committed >= 0:
                        p.add_sampled(committed, at, compute_lag(committed, log_end), size, self.settings.allowed_lag)
        for tp, points in histories.items():
            history = self._histories.setdefault(tp, LogEndHistory())
            for end, at in points:
                history.add(end, at)

    def replay_shares(self, history: Mapping[str, list[tuple[int, Mapping[TopicPartition, SharePartition]]]]) -> None:
        """Add stored share-partition samples, oldest first, as cycles would have: the archived counts and their
        rises since the state was saved, or of share groups taken over from another collector."""
        for group_id, points in history.items():
            shares = self._shares.setdefault(group_id, {})
            for at, share in points:
                for tp, sp in share.items():
                    shares[tp] = compute_share_health(tp, sp, shares.get(tp), at)


def compute_group_health(
    g: GroupSnapshot, healths: list[PartitionHealth], share: tuple[ShareHealth, ...] = ()
) -> GroupHealth:
    """The group's roll-up of its partitions' health (a share group's share-partitions ride along)."""
    status, worst = compute_group_status(p.status for p in healths)
    total, max_lag, max_tp = 0, 0, None
    for p in healths:
        if p.lag is not None:
            total += p.lag
            if max_tp is None or p.lag > max_lag or (p.lag == max_lag and p.tp < max_tp):
                max_lag, max_tp = p.lag, p.tp
    complete = sum(1 for p in healths if p.complete >= 1.0) / len(healths) if healths else 0.0
    return GroupHealth(
        g.group_id, g.state, len(g.members), status, worst, total, max_lag, max_tp, complete, tuple(healths), share
    )
