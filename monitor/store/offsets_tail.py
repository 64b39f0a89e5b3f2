"""What the offsets-topic tail stores: commits, generations, its rebalances, its read positions.

`write_tail_update` stores one batch in one transaction together with the new
read positions, so a crash either keeps the batch and its positions or
neither: a restart resumes exactly where the stored data ends. It shares the
collector's Store (its interned ids) under `Store.lock`, since it runs in
its own thread of the collector process.

Rebalances: a tail rebalance (exact generations) and a polled one (sampled
bounds, session-timeout evidence) of the same group that overlap in time are
one rebalance, one row, `source` "both"; whichever is written second merges
into the first (see also Store.write_rebalances).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from monitor.offsets_topic.history import CommitRow, GenerationRow, TailUpdate
from monitor.store.rebalances import write_tail_rebalance
from monitor.store.schema import (
    consumer_groups,
    group_generations,
    group_partitions,
    offset_commits,
    offsets_tail_positions,
    topic_partitions,
)
from monitor.store.sql import dumps_json, executemany, insert_ignoring_duplicates, intern_ids
from monitor.store.writer import Store

HOUR = 3_600_000


def write_tail_update(store: Store, cluster: str, update: TailUpdate, now: int) -> None:
    """Store one batch of the tail and where it got to, atomically."""
    if update.empty:
        return
    with store.transaction(cluster) as (conn, ids):
        if update.commits:
            _write_commits(conn, ids, cluster, update.commits)
        for row in update.generations:
            _upsert_generation(conn, cluster, row)
        for r in update.rebalances:
            write_tail_rebalance(conn, cluster, r)
        if update.positions:
            _write_positions(conn, cluster, store.shard.label, update, now)


def _write_commits(conn: Connection, ids, cluster: str, commits: list[CommitRow]) -> None:
    refs, tp_ids, gp_ids = ids.group_refs, ids.tp_ids, ids.gp_ids
    rows, new = [], []  # one pass: 20,000 commits a second come through here
    for c in commits:
        gp_id = gp_ids.get((refs.get(c[0]), tp_ids.get(c[1:3])))
        if gp_id is None:
            new.append(c)
        else:
            rows.append((c[4], gp_id, c[3], c[5]))
    if new:
        missing = list(dict.fromkeys(c[:3] for c in new))
        first_seen = min(c.committed_at for c in commits)
        intern_ids(
            conn,
            topic_partitions,
            tp_ids,
            (k[1:] for k in missing),
            lambda k: {"cluster": cluster, "topic": k[0], "partition": k[1]},
        )
        intern_ids(
            conn,
            consumer_groups,
            refs,
            (k[0] for k in missing),
            lambda k: {"cluster": cluster, "group_id": k, "first_seen_at": first_seen},
        )
        intern_ids(
            conn,
            group_partitions,
            gp_ids,
            [(refs[k[0]], tp_ids[k[1:]]) for k in missing],
            lambda k: {"group_ref": k[0], "tp_id": k[1]},
        )
        rows += [(c[4], gp_ids[(refs[c[0]], tp_ids[c[1:3]])], c[3], c[5]) for c in new]
    columns = ("committed_at", "gp_id", "committed", "leader_epoch")
    rows.sort()  # the table's order: appended, mostly
    # The same commit twice (same offset, same ms) is one commit: e.g. stored again by a new shard layout.
    executemany(
        conn,
        "offset_commits",
        lambda: insert_ignoring_duplicates(conn, offset_commits),
        columns,
        rows,
        column_keys=list(columns),
    )


def _members_json(row: GenerationRow) -> str:
    return dumps_json(
        [{**asdict(m), "assignment": [f"{tp.topic}:{tp.partition}" for tp in m.assignment]} for m in row.members]
    )


def _upsert_generation(conn: Connection, cluster: str, row: GenerationRow) -> None:
    g = group_generations
    values = {
        "at": row.at,
        "protocol_type": row.protocol_type,
        "protocol": row.protocol,
        "leader": row.leader,
        "members": _members_json(row),
    }
    key = sa.and_(g.c.cluster == cluster, g.c.group_id == row.group_id, g.c.kind == row.kind, g.c.epoch == row.epoch)
    if conn.execute(g.update().where(key).values(**values)).rowcount == 0:
        conn.execute(
            g.insert().values(cluster=cluster, group_id=row.group_id, kind=row.kind, epoch=row.epoch, **values)
        )


def _write_positions(conn: Connection, cluster: str, shard: str, update: TailUpdate, now: int) -> None:
    """Where the tail got to on each partition, and the records it skipped on the way (count, newest reason):
    one statement for the batch (one per partition was most of a busy tail's store time)."""
    columns = ("cluster", "shard", "partition", "next_offset", "updated_at", "skipped", "last_skipped")
    rows = [
        (cluster, shard, partition, offset, now, *update.failures.get(partition, (0, None)))
        for partition, offset in update.positions.items()
    ]
    executemany(conn, "offsets_tail_positions", lambda: _upsert_positions(conn), columns, rows, list(columns))


def _upsert_positions(conn: Connection):
    p = offsets_tail_positions
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    stmt = insert(p)
    return stmt.on_conflict_do_update(
        index_elements=[p.c.cluster, p.c.shard, p.c.partition],
        set_={
            "next_offset": stmt.excluded.next_offset,
            "updated_at": stmt.excluded.updated_at,
            "skipped": p.c.skipped + stmt.excluded.skipped,
            "last_skipped": sa.func.coalesce(stmt.excluded.last_skipped, p.c.last_skipped),
        },
    )


# ---- reads ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CommitEntry:
    topic: str
    partition: int
    offset: int | None  # None: the offset was deleted or expired
    committed_at: int
    leader_epoch: int | None


@dataclass(frozen=True)
class TailPosition:
    partition: int
    next_offset: int  # the next __consumer_offsets offset the tail will read
    updated_at: int
    shard: str = "1/1"  # the collector shard whose tail this is
    skipped: int = 0  # records it could not decode or apply here, and read on past
    last_skipped: str | None = None  # the newest of them: offset and reason


def read_tail_status(engine: Engine, cluster: str) -> list[TailPosition]:
    """Where each shard's offsets-topic tail stands per partition and when it last moved (none: tail off)."""
    t = offsets_tail_positions
    q = (
        sa.select(t.c.partition, t.c.next_offset, t.c.updated_at, t.c.shard, t.c.skipped, t.c.last_skipped)
        .where(t.c.cluster == cluster)
        .order_by(t.c.shard, t.c.partition)
    )
    with engine.connect() as conn:
        return [TailPosition(*row) for row in conn.execute(q)]


def read_tail_positions(engine: Engine, cluster: str, shard: str = "1/1") -> dict[int, int]:
    """Where this shard's tail has stored up to, per partition.

    A shard with no positions of its own starts from the span, unless the
    cluster was collected with another shard count before (e.g. unsharded,
    "1/1"): then from where those earlier collectors had all got to (the lowest
    of their positions per partition), since they stored every group's records
    below it; a commit stored twice is one row (the insert ignores duplicates).
    A sibling shard of the same count is no guide: it stored only its groups.
    """
    p = offsets_tail_positions
    count = shard.partition("/")[2]
    with engine.connect() as conn:
        stored = conn.execute(sa.select(p.c.shard, p.c.partition, p.c.next_offset).where(p.c.cluster == cluster)).all()
    own = {partition: offset for label, partition, offset in stored if label == shard}
    if own:
        return own
    earlier: dict[int, int] = {}
    for label, partition, offset in stored:
        if label.partition("/")[2] != count:
            earlier[partition] = min(offset, earlier.get(partition, offset))
    return earlier


def read_commits(
    engine: Engine,
    cluster: str,
    group: str,
    topic: str | None = None,
    partition: int | None = None,
    since: int | None = None,
) -> list[CommitEntry]:
    """Every stored commit of a group, oldest first (rolled up with age: the last per minute / 10 minutes)."""
    c, gp, g, tp = offset_commits, group_partitions, consumer_groups, topic_partitions
    query = (
        sa.select(tp.c.topic, tp.c.partition, c.c.committed, c.c.committed_at, c.c.leader_epoch)
        .select_from(c.join(gp, gp.c.id == c.c.gp_id).join(g, g.c.id == gp.c.group_ref).join(tp, tp.c.id == gp.c.tp_id))
        .where(g.c.cluster == cluster, g.c.group_id == group)
        .order_by(c.c.committed_at, tp.c.topic, tp.c.partition)
    )
    if topic is not None:
        query = query.where(tp.c.topic == topic)
    if partition is not None:
        query = query.where(tp.c.partition == partition)
    if since is not None:
        query = query.where(c.c.committed_at >= since)
    with engine.connect() as conn:
        return [CommitEntry(t, p, None if o < 0 else o, at, e) for t, p, o, at, e in conn.execute(query)]


def read_generations(engine: Engine, cluster: str, group: str, kind: str | None = None) -> list[dict]:
    """Stored generations/epochs of a group, oldest first, members parsed."""
    g = group_generations
    query = sa.select(g).where(g.c.cluster == cluster, g.c.group_id == group).order_by(g.c.at, g.c.id)
    if kind is not None:
        query = query.where(g.c.kind == kind)
    with engine.connect() as conn:
        return [{**row._asdict(), "members": json.loads(row.members)} for row in conn.execute(query)]


# ---- retention -------------------------------------------------------------------------

_ROLLED: dict[tuple, int] = {}  # (engine, cluster, width) -> commits before this time are already rolled


def apply_tail_retention(step, engine: Engine, cluster: str, rolls: list[tuple[int, int]], drop_before: int) -> int:
    """Keep the last commit per `width` bucket before each (width, cutoff); delete commits before `drop_before`.

    Works an hour of commit time per step, and remembers how far it got, so a
    run every minute touches only the new hour(s).
    """
    c, gp, g = offset_commits, group_partitions, consumer_groups
    gps = sa.select(gp.c.id).join(g, g.c.id == gp.c.group_ref).where(g.c.cluster == cluster).scalar_subquery()
    oldest = step(
        lambda conn: conn.execute(sa.select(sa.func.min(c.c.committed_at)).where(c.c.gp_id.in_(gps))).scalar(),
        write=False,
    )
    if oldest is None:
        return 0
    deleted = 0
    kept = c.alias("kept")
    for width, cutoff in rolls:
        lo = max(oldest, _ROLLED.get((id(engine), cluster, width), oldest))
        while lo < cutoff:
            hi = min(cutoff, lo - lo % HOUR + HOUR)  # hours are whole buckets of either width
            # the last commit per partition and bucket (// : integer division in SQL), found in one pass
            last = (
                sa.select(kept.c.gp_id, sa.func.max(kept.c.committed_at))
                .where(kept.c.gp_id.in_(gps), kept.c.committed_at >= lo, kept.c.committed_at < hi)
                .group_by(kept.c.gp_id, kept.c.committed_at // width)
            )
            stmt = c.delete().where(
                c.c.gp_id.in_(gps),
                c.c.committed_at >= lo,
                c.c.committed_at < hi,
                sa.tuple_(c.c.gp_id, c.c.committed_at).not_in(last),
            )
            deleted += step(lambda conn, s=stmt: conn.execute(s).rowcount)
            lo = hi
        _ROLLED[(id(engine), cluster, width)] = max(lo, cutoff)
    lo = oldest
    while lo < drop_before:
        hi = min(drop_before, lo - lo % HOUR + HOUR)
        stmt = c.delete().where(c.c.gp_id.in_(gps), c.c.committed_at >= lo, c.c.committed_at < hi)
        deleted += step(lambda conn, s=stmt: conn.execute(s).rowcount)
        lo = hi
    return deleted
