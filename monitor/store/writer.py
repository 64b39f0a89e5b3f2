"""The writer: one `Store` per collector process turns snapshots into rows.

A cycle is one short transaction: the sample row, ~N offset rows and ~M
partition rows by executemany, and only the slowly changing facts that
changed. The Store caches, per cluster, the interned dimension ids and the
open (current) SCD rows, so a cycle never re-reads them; the cache is loaded
from the database on first use (a restarted collector continues the open
intervals) and dropped whenever a write fails, since the rollback undid it.
Design rule: one writer per group. A cluster may be split between collector
shards (monitor.shard): each Store then caches and closes only the SCD rows of
its own groups, and the dimension rows all shards share are interned with
INSERT .. ON CONFLICT DO NOTHING followed by a SELECT, so two shards adding
the same topic-partition at once both get the one row's id.

What is written here and what by subject: the offsets and the groups' intervals
(read back by lag.py and groups.py) stay here, since both work on that cache;
the sample row, events and rebalances are built or placed by samples.py,
events.py and rebalances.py, and the Store only runs them under its lock in its
transactions (as the offsets-topic tail does, offsets_tail.write_tail_update).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from itertools import repeat

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from monitor.models import ClusterSnapshot, Event, GroupSnapshot, GroupType, Member, Rebalance
from monitor.shard import UNSHARDED, Shard
from monitor.store.engine import BUSY_TIMEOUT_MS, store_errors, write_engine
from monitor.store.events import event_values
from monitor.store.group_facts import member_detail_json, topology_json
from monitor.store.health import StatusChanges, insert_status_changes
from monitor.store.rebalances import write_polled_rebalance
from monitor.store.samples import insert_sample, set_cycle_time
from monitor.store.schema import (
    assignments,
    consumer_groups,
    events,
    group_members,
    group_partitions,
    group_states,
    offset_samples,
    partition_samples,
    share_partition_samples,
    topic_partitions,
)
from monitor.store.sql import (
    bulk_insert,
    chunks,
    enum_value,
    executemany,
    insert_returning_ids,
    intern_ids,
)


@dataclass(frozen=True)
class CycleWrite:
    """What one collector cycle stores (Store.write_cycle): its snapshot, or None when sampling failed,
    with that cycle's events, rebalances and status changes."""

    cluster: str
    taken_at: int
    duration_ms: int  # the sampling part; the whole cycle's time is added once it is known
    snapshot: ClusterSnapshot | None
    errors: tuple[str, ...] = ()  # why sampling failed (snapshot None)
    events: tuple[Event, ...] = ()
    rebalances: tuple[Rebalance, ...] = ()
    statuses: StatusChanges | None = None

    def estimate_bytes(self) -> int:
        """Roughly what holding it costs: the snapshot's offsets dominate (~150 bytes a partition)."""
        if self.snapshot is None:
            return 500
        snapshot = self.snapshot
        offsets = len(snapshot.partitions) + sum(len(g.committed) for g in snapshot.groups.values())
        return 1000 + 150 * offsets + 500 * len(snapshot.groups) + 300 * (len(self.events) + len(self.rebalances))


def compute_answered(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """The snapshot without what Kafka did not answer this cycle (stale groups and partitions): their
    offsets are not this sample's, so the history has no row for them rather than a repeated one."""
    stale = {g for g, group in snapshot.groups.items() if group.stale_since is not None}
    if not stale and not snapshot.stale_partitions:
        return snapshot
    return replace(
        snapshot,
        groups={g: group for g, group in snapshot.groups.items() if g not in stale},
        partitions={tp: p for tp, p in snapshot.partitions.items() if tp not in snapshot.stale_partitions},
    )


def _locked(method):
    """One writer thread at a time: the offsets-topic tail shares the Store with the sampler."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with self.lock:
            return method(self, *args, **kwargs)

    return run


@dataclass
class _ClusterCache:
    """What the database holds for one cluster that a cycle needs to compare with."""

    tp_ids: dict[tuple[str, int], int] = field(default_factory=dict)
    group_refs: dict[str, int] = field(default_factory=dict)
    gp_ids: dict[tuple[int, int], int] = field(default_factory=dict)  # (group_ref, tp_id)
    # group -> (its committed partitions in snapshot order, their gp ids): a group whose partitions are
    # the same as last cycle needs no interning and no per-partition lookups
    layouts: dict[str, tuple[tuple, tuple[int, ...]]] = field(default_factory=dict)
    # the offsets of the sample this Store wrote last (group -> committed, in layout order) and its id
    committed: dict[str, tuple] = field(default_factory=dict)
    committed_sample: int | None = None
    # group -> (state facts, members) as last written: an unchanged group skips the interval diffs
    seen: dict[str, tuple[tuple, tuple]] = field(default_factory=dict)
    full_ids_kept: set[str] = field(default_factory=set)  # stored names whose full id this Store wrote
    # open SCD rows: key -> (row id, facts)
    states: dict[str, tuple[int, tuple]] = field(default_factory=dict)
    members: dict[str, dict[str, tuple[int, tuple]]] = field(default_factory=dict)
    # group -> (topic, partition, member) -> (row id, None): a share group's partition may have several holders
    owners: dict[str, dict[tuple[str, int, str], tuple[int, None]]] = field(default_factory=dict)
    version: int = 0  # of what the Store's shard owned when it was read


class Store:
    """Writes snapshots, events and rebalances of any number of clusters to one database.

    Writes are serialised by `lock` (the collector's sampling thread and its
    offsets-topic tail thread both write); readers need only the engine.
    """

    def __init__(self, engine: Engine, shard: Shard = UNSHARDED, busy_timeout_ms: int = BUSY_TIMEOUT_MS):
        """`busy_timeout_ms`: how long a write waits for SQLite's lock held by another process."""
        self.engine = engine
        self.shard = shard  # the groups this writer owns: it caches and closes only theirs
        self._writer = write_engine(engine, busy_timeout_ms)
        self._caches: dict[str, _ClusterCache] = {}
        self.lock = threading.RLock()
        self._merged: dict[tuple[str, str, int], int] = {}  # polled (cluster, group, started_at) -> tail row id

    # -- public ---------------------------------------------------------------

    @contextmanager
    def transaction(self, cluster: str) -> Iterator[tuple[Connection, _ClusterCache]]:
        """A write transaction under the writer lock, with the cluster's cached ids (write_snapshot and the tail).

        A failure drops the cache: the rollback undid ids it may hold.
        """
        with self.lock:
            try:
                with self._writer.begin() as conn:
                    yield conn, self._cache(conn, cluster)
            except BaseException:
                self._caches.pop(cluster, None)
                raise

    def write_snapshot(self, snapshot: ClusterSnapshot, *, close_missing: bool = True) -> int:
        """Store one collector cycle; returns the sample id.

        Groups absent from the snapshot get their open intervals closed at
        `taken_at` (they were deleted or expired) unless the cycle reported
        errors (absence may then be a failure) or `close_missing` is False.
        A shard closes only groups it owns (see compute_groups_to_close).
        Members and assignments are taken as given: an empty tuple means none.
        """
        with self.transaction(snapshot.cluster) as (conn, cache):
            return self._insert_snapshot(conn, cache, snapshot, close_missing)

    def _insert_snapshot(
        self, conn: Connection, cache: _ClusterCache, snapshot: ClusterSnapshot, close_missing: bool
    ) -> int:
        sample_id = insert_sample(
            conn,
            snapshot.cluster,
            snapshot.taken_at,
            snapshot.duration_ms,
            groups=len(snapshot.groups),
            partitions=len(snapshot.partitions),
            errors=snapshot.errors,
            shard=self.shard.label,
            collector=self.shard.name,
            unanswered={g: group.stale_since for g, group in snapshot.groups.items() if group.stale_since is not None},
        )
        self._write_offsets(conn, cache, compute_answered(snapshot), sample_id)
        # a group missing from a cycle with errors, or with a group type it could not see, may still exist
        self._write_scd(conn, cache, snapshot, close_missing and not snapshot.errors and not snapshot.unsampled)
        return sample_id

    def write_cycle(self, cycle: CycleWrite) -> int:
        """One collector cycle in one transaction: its sample row, offsets, intervals, events, rebalances and
        status changes all commit together or not at all; returns the sample id.

        A failure that passes (the database restarting, locked, full) is StoreUnavailable and one that
        does not (permissions, a missing table) StoreRefused; the caller keeps the cycle to write again.
        """
        merged: dict[tuple[str, str, int], int] = {}
        with store_errors("cannot store the cycle"), self.transaction(cycle.cluster) as (conn, cache):
            snapshot = cycle.snapshot
            if snapshot is None:
                sample_id = self._insert_failed_sample(conn, cycle)
            else:
                sample_id = self._insert_snapshot(conn, cache, snapshot, close_missing=True)
            rows = event_values(cycle.cluster, cycle.events)
            if rows:
                conn.execute(events.insert(), rows)
            for r in cycle.rebalances:
                key = (cycle.cluster, r.group_id, r.started_at)
                placed = write_polled_rebalance(conn, cycle.cluster, r, merged.get(key, self._merged.get(key)))
                if placed.merged:
                    merged[key] = placed.row_id
            if cycle.statuses is not None:
                insert_status_changes(conn, cycle.cluster, cycle.statuses)
        self._merged.update(merged)  # only once committed: a rollback undid the rows they point at
        return sample_id

    def _insert_failed_sample(self, conn: Connection, cycle: CycleWrite) -> int:
        return insert_sample(
            conn,
            cycle.cluster,
            cycle.taken_at,
            cycle.duration_ms,
            groups=0,
            partitions=0,
            errors=cycle.errors or ("failed",),
            shard=self.shard.label,
            collector=self.shard.name,
        )

    def write_sample_error(self, cluster: str, taken_at: int, duration_ms: int, errors: Iterable[str]) -> int:
        """Record a cycle that produced no snapshot, so gaps in the history are explained."""
        return self.write_cycle(CycleWrite(cluster, taken_at, duration_ms, None, errors=tuple(errors)))

    @_locked
    def write_cycle_time(self, sample_id: int, duration_ms: int, sampling_ms: int | None) -> None:
        """The whole cycle's time, known only once the health step and the observers are done."""
        with self._writer.begin() as conn:
            set_cycle_time(conn, sample_id, duration_ms, sampling_ms)

    @_locked
    def write_events(self, cluster: str, items: Iterable[Event]) -> int:
        """Append events; returns how many were written."""
        rows = event_values(cluster, items)
        if rows:
            with self._writer.begin() as conn:
                conn.execute(events.insert(), rows)
        return len(rows)

    @_locked
    def write_rebalances(self, cluster: str, items: Iterable[Rebalance]) -> int:
        """Upsert by (cluster, group, started_at): an in-progress rebalance is completed in place."""
        count = 0
        with self._writer.begin() as conn:
            for r in items:
                key = (cluster, r.group_id, r.started_at)
                placed = write_polled_rebalance(conn, cluster, r, self._merged.get(key))
                if placed.merged:  # one rebalance, one row: later writes of it go there too
                    self._merged[key] = placed.row_id
                count += 1
        return count

    # -- internals --------------------------------------------------------------

    def _cache(self, conn: Connection, cluster: str) -> _ClusterCache:
        """What this writer knows is stored of its groups; read again when a coordinated collector's groups move."""
        cache = self._caches.get(cluster)
        if cache is None or cache.version != self.shard.version:
            cache = self._caches[cluster] = _load_cache(conn, cluster, self.shard.owns, self.shard.version)
        return cache

    def _write_offsets(self, conn: Connection, cache: _ClusterCache, snapshot: ClusterSnapshot, sample_id: int) -> None:
        cluster = snapshot.cluster
        layouts = cache.layouts
        changed = [
            g
            for g in snapshot.groups.values()
            if g.committed and (g.group_id not in layouts or layouts[g.group_id][0] != tuple(g.committed))
        ]
        tps = [tp for tp in snapshot.partitions if tp not in cache.tp_ids]
        for g in changed:
            tps.extend(g.committed)
        intern_ids(
            conn,
            topic_partitions,
            cache.tp_ids,
            tps,
            lambda k: {"cluster": cluster, "topic": k[0], "partition": k[1]},
        )
        intern_ids(
            conn,
            consumer_groups,
            cache.group_refs,
            [g for g in snapshot.groups if g not in cache.group_refs],
            lambda k: {"cluster": cluster, "group_id": k, "first_seen_at": snapshot.taken_at},
        )
        _keep_full_ids(conn, cache, cluster, snapshot.full_ids)
        pairs = [(cache.group_refs[g.group_id], cache.tp_ids[tp]) for g in changed for tp in g.committed]
        intern_ids(
            conn,
            group_partitions,
            cache.gp_ids,
            pairs,
            lambda k: {"group_ref": k[0], "tp_id": k[1]},
        )
        for g in changed:
            gref = cache.group_refs[g.group_id]
            layouts[g.group_id] = (
                tuple(g.committed),
                tuple(cache.gp_ids[(gref, cache.tp_ids[tp])] for tp in g.committed),
            )

        bulk_insert(
            conn,
            partition_samples,
            ("sample_id", "tp_id", "log_start", "log_end", "lso_gap"),
            sorted(
                (
                    (
                        sample_id,
                        cache.tp_ids[tp],
                        p.log_start,
                        p.log_end,
                        None if p.last_stable is None else p.log_end - p.last_stable,
                    )
                    for tp, p in snapshot.partitions.items()
                ),
                key=_second,
            ),
        )
        self._write_committed(conn, cache, snapshot, sample_id, [g.group_id for g in changed])
        _write_share_partitions(conn, cache, snapshot, sample_id)

    def _write_committed(
        self, conn: Connection, cache: _ClusterCache, snapshot: ClusterSnapshot, sample_id: int, relaid: list[str]
    ) -> None:
        """The sample's committed offsets, and each group's pointer to its newest sample.

        A group whose offsets are the ones this Store wrote in its previous sample (an idle
        cluster: nearly all) has its rows copied by the database (INSERT .. SELECT) rather than
        built here and sent one by one: 20,000 rows cost about 20 ms instead of 55. The copy's row
        count is checked; should the previous rows be gone, every row is written here instead.
        """
        layouts, previous, relaid = cache.layouts, cache.committed, set(relaid)
        rows, kept, kept_rows, refreshed, now = [], [], 0, [], {}
        for g in snapshot.groups.values():
            if not g.committed:
                continue
            gref = cache.group_refs[g.group_id]
            refreshed.append(gref)
            committed = tuple(g.committed.values())
            if None in committed or min(committed) < 0:
                # Kafka answers -1001 for "no commit"; a negative offset is never a position.
                committed = tuple(None if c is None or c < 0 else c for c in committed)
            now[g.group_id] = committed
            # offsets remembered in an old partition order (relaid) compare with nothing
            if g.group_id not in relaid and previous.get(g.group_id) == committed:
                kept.append(gref)
                kept_rows += len(committed)
            else:
                rows.extend(zip(repeat(sample_id), layouts[g.group_id][1], committed))
        if kept and not _copy_offset_rows(
            conn, cache.committed_sample, sample_id, kept, kept_rows, every=len(kept) == len(previous)
        ):
            rows = [
                (sample_id, gp, c)
                for g, committed in now.items()
                for gp, c in zip(layouts[g][1], committed, strict=True)
            ]
        rows.sort(key=_second)  # key order: every row appends at the b-tree's right edge
        bulk_insert(conn, offset_samples, ("sample_id", "gp_id", "committed"), rows)
        if now.keys() != previous.keys() or not _move_last_sample(
            conn, cache.committed_sample, sample_id, len(refreshed)
        ):
            executemany(
                conn,
                "last_sample_id",
                lambda: (
                    consumer_groups.update()
                    .where(consumer_groups.c.id == sa.bindparam("ref"))
                    .values(last_sample_id=sa.bindparam("sample"))
                ),
                ("sample", "ref"),
                [(sample_id, ref) for ref in refreshed],
            )
        cache.committed, cache.committed_sample = now, sample_id

    def _write_scd(
        self, conn: Connection, cache: _ClusterCache, snapshot: ClusterSnapshot, close_missing: bool
    ) -> None:
        at = snapshot.taken_at
        cluster = snapshot.cluster
        closed: dict[sa.Table, list[int]] = {group_states: [], group_members: [], assignments: []}
        new_states: list[tuple[str, tuple]] = []
        new_members: list[tuple[str, str, tuple]] = []
        new_owners: list[tuple[str, tuple[str, int, str], None]] = []

        for g in snapshot.groups.values():
            if g.stale_since is not None:  # not answered this cycle: its intervals stay as they are
                continue
            facts = _state_facts(g)
            if cache.seen.get(g.group_id) == (facts, g.members):
                continue
            cache.seen[g.group_id] = (facts, g.members)
            current = cache.states.get(g.group_id)
            if current is None or current[1] != facts:
                if current is not None:
                    closed[group_states].append(current[0])
                new_states.append((g.group_id, facts))

            seen_members: dict[str, tuple] = {}
            seen_owners: dict[tuple[str, int, str], None] = {}
            shared, held = g.type is GroupType.SHARE, set()  # share members share partitions; others: first wins
            for m in g.members:
                seen_members.setdefault(m.member_id, _member_facts(m))
                for tp in m.assignment:
                    if shared or tp not in held:
                        held.add(tp)
                        seen_owners[(tp[0], tp[1], m.member_id)] = None
            _diff(
                cache.members.setdefault(g.group_id, {}),
                seen_members,
                closed[group_members],
                lambda k, f, gid=g.group_id: new_members.append((gid, k, f)),
            )
            _diff(
                cache.owners.setdefault(g.group_id, {}),
                seen_owners,
                closed[assignments],
                lambda k, f, gid=g.group_id: new_owners.append((gid, k, f)),
            )

        if close_missing:
            for group_id in compute_groups_to_close(cache.states, snapshot.groups, self.shard.owns):
                closed[group_states].append(cache.states.pop(group_id)[0])
                cache.seen.pop(group_id, None)
                closed[group_members].extend(rid for rid, _ in cache.members.pop(group_id, {}).values())
                closed[assignments].extend(rid for rid, _ in cache.owners.pop(group_id, {}).values())

        for table, ids in closed.items():
            for chunk in chunks(ids):
                conn.execute(table.update().where(table.c.id.in_(chunk)).values(valid_to=at))

        ids = insert_returning_ids(
            conn,
            group_states,
            [
                {"cluster": cluster, "group_id": gid, "valid_from": at, **dict(zip(_STATE_COLUMNS, f, strict=True))}
                for gid, f in new_states
            ],
        )
        for (gid, f), rid in zip(new_states, ids, strict=True):
            cache.states[gid] = (rid, f)

        ids = insert_returning_ids(
            conn,
            group_members,
            [
                {
                    "cluster": cluster,
                    "group_id": gid,
                    "member_id": mid,
                    "valid_from": at,
                    **dict(zip(_MEMBER_COLUMNS, f, strict=True)),
                }
                for gid, mid, f in new_members
            ],
        )
        for (gid, mid, f), rid in zip(new_members, ids, strict=True):
            cache.members[gid][mid] = (rid, f)

        ids = insert_returning_ids(
            conn,
            assignments,
            [
                {
                    "cluster": cluster,
                    "group_id": gid,
                    "topic": key[0],
                    "partition": key[1],
                    "member_id": key[2],
                    "valid_from": at,
                }
                for gid, key, _ in new_owners
            ],
        )
        for (gid, key, _), rid in zip(new_owners, ids, strict=True):
            cache.owners[gid][key] = (rid, None)


_STATE_COLUMNS = (
    "state",
    "type",
    "protocol_type",
    "assignor",
    "coordinator",
    "note",
    "epoch",
    "assignment_epoch",
    "topology",
    "state_inferred",  # last: loaded back as a bool (see _load_cache)
)
_MEMBER_COLUMNS = ("instance_id", "client_id", "host", "rack", "detail")


def _state_facts(g: GroupSnapshot) -> tuple:
    return (
        enum_value(g.state),
        enum_value(g.type),
        g.protocol_type,
        g.assignor,
        g.coordinator,
        g.note,
        g.epoch,
        g.assignment_epoch,
        topology_json(g.topology),
        bool(g.state_inferred),
    )


def _member_facts(m: Member) -> tuple:
    return (m.instance_id, m.client_id, m.host, m.rack, member_detail_json(m))


def _diff(current: dict, seen: dict, closed: list[int], add) -> None:
    """Close rows whose facts changed or vanished (dropping them from `current`), report new ones."""
    for key, (rid, facts) in list(current.items()):
        if seen.get(key, _MISSING) != facts:
            closed.append(rid)
            del current[key]
    for key, facts in seen.items():
        if key not in current:
            add(key, facts)


_MISSING = object()


def compute_groups_to_close(open_groups: Iterable[str], snapshot_groups: Iterable[str], owns) -> list[str]:
    """Groups with open rows that this writer owns and the cycle no longer saw, sorted.

    A sharded sampler lists every group of the cluster and keeps its own share,
    so one of its groups missing from a cycle without errors is missing from
    the cluster's full listing: deleted or expired. Another shard's group is
    never closed here, whatever this writer's cache holds.
    """
    seen = set(snapshot_groups)
    return sorted(g for g in open_groups if g not in seen and owns(g))


def _keep_full_ids(conn: Connection, cache: _ClusterCache, cluster: str, full_ids: Mapping[str, str]) -> None:
    """Beside each stand-in name (monitor.names), the id Kafka knows, as UTF-8 bytes: a NUL is kept too."""
    rows = [
        (full.encode("utf-8", "surrogatepass"), name)
        for name, full in full_ids.items()
        if name not in cache.full_ids_kept
    ]
    if rows:
        g = consumer_groups
        conn.execute(
            g.update().where(g.c.cluster == cluster, g.c.group_id == sa.bindparam("name")),
            [{"full_id": full, "name": name} for full, name in rows],
        )
        cache.full_ids_kept.update(name for _, name in rows)


def _load_cache(conn: Connection, cluster: str, owns=lambda group_id: True, version: int = 0) -> _ClusterCache:
    """Every interned id of the cluster, and the open SCD rows of the groups `owns` accepts."""
    cache = _ClusterCache(version=version)
    t = topic_partitions
    for rid, topic, partition in conn.execute(
        sa.select(t.c.id, t.c.topic, t.c.partition).where(t.c.cluster == cluster)
    ):
        cache.tp_ids[(topic, partition)] = rid
    g = consumer_groups
    for rid, group_id in conn.execute(sa.select(g.c.id, g.c.group_id).where(g.c.cluster == cluster)):
        cache.group_refs[group_id] = rid
    gp = group_partitions
    for rid, gref, tp_id in conn.execute(
        sa.select(gp.c.id, gp.c.group_ref, gp.c.tp_id).join(g, g.c.id == gp.c.group_ref).where(g.c.cluster == cluster)
    ):
        cache.gp_ids[(gref, tp_id)] = rid

    s = group_states
    cols = [s.c[name] for name in _STATE_COLUMNS]
    for row in conn.execute(
        sa.select(s.c.id, s.c.group_id, *cols).where(s.c.cluster == cluster, s.c.valid_to.is_(None))
    ):
        if owns(row[1]):
            cache.states[row[1]] = (row[0], (*row[2:-1], bool(row[-1])))
    m = group_members
    for rid, gid, mid, *facts in conn.execute(
        sa.select(m.c.id, m.c.group_id, m.c.member_id, *[m.c[name] for name in _MEMBER_COLUMNS]).where(
            m.c.cluster == cluster, m.c.valid_to.is_(None)
        )
    ):
        if owns(gid):
            cache.members.setdefault(gid, {})[mid] = (rid, tuple(facts))
    a = assignments
    for rid, gid, topic, partition, owner in conn.execute(
        sa.select(a.c.id, a.c.group_id, a.c.topic, a.c.partition, a.c.member_id).where(
            a.c.cluster == cluster, a.c.valid_to.is_(None)
        )
    ):
        if owns(gid):
            cache.owners.setdefault(gid, {})[(topic, partition, owner)] = (rid, None)
    return cache


def _write_share_partitions(conn: Connection, cache: _ClusterCache, snapshot: ClusterSnapshot, sample_id: int) -> None:
    """Each share-partition's start offset and in-flight counts (its position is in offset_samples)."""
    rows = []
    for g in snapshot.groups.values():
        if not g.share:
            continue
        gp_of = dict(zip(*cache.layouts[g.group_id], strict=True))
        rows += [
            (
                sample_id,
                gp_of[tp],
                sp.start_offset,
                sp.delivery_complete,
                sp.acknowledged,
                sp.archived,
                sp.redelivering,
                sp.max_delivery_count,
            )
            for tp, sp in g.share.items()
            if tp in gp_of
        ]
    rows.sort(key=_second)
    bulk_insert(conn, share_partition_samples, _SHARE_COLUMNS, rows)


_SHARE_COLUMNS = tuple(c.name for c in share_partition_samples.columns)


def _copy_offset_rows(
    conn: Connection, source: int | None, sample_id: int, group_refs: list[int], expected: int, every: bool
) -> bool:
    """Copy the rows of `group_refs` (`every` group of `source`, or some) from sample `source` into
    `sample_id`, `expected` rows; False (nothing copied) if any is missing."""
    if source is None:
        return False
    o, gp = offset_samples, group_partitions
    rows = sa.select(sa.literal(sample_id), o.c.gp_id, o.c.committed).where(o.c.sample_id == source)
    if not every:  # only the kept groups' partitions
        rows = rows.where(o.c.gp_id.in_(sa.select(gp.c.id).where(gp.c.group_ref.in_(group_refs))))
    conn.execute(o.insert().from_select(["sample_id", "gp_id", "committed"], rows))
    # counted, not the rowcount: psycopg reports none (-1) for INSERT .. SELECT
    if conn.execute(sa.select(sa.func.count()).where(o.c.sample_id == sample_id)).scalar() == expected:
        return True
    conn.execute(o.delete().where(o.c.sample_id == sample_id))
    return False


def _move_last_sample(conn: Connection, source: int | None, sample_id: int, groups: int) -> bool:
    """Point the `groups` groups that pointed at sample `source` at `sample_id`; False if they were not all there."""
    if source is None:
        return False
    g = consumer_groups
    moved = conn.execute(g.update().where(g.c.last_sample_id == source).values(last_sample_id=sample_id)).rowcount
    return moved == groups


def _second(row: tuple):
    return row[1]
