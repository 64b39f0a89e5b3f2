"""Groups Kafka accepts whatever their ids: stored on SQLite and PostgreSQL, whole ids kept (monitor.names).

PostgreSQL refuses a NUL in any text and an index entry over ~2.7 kB: the raw ids
below fail there. Under their stored names they are written, found again by a
new writer (a restarted collector), and their whole ids read back byte for byte.
"""

from __future__ import annotations

from dataclasses import replace

from factories import T0, make_group, make_snapshot

from monitor.models import Member
from monitor.names import plain_text, stored_name
from monitor.store import Store, read_groups
from monitor.store.groups import read_group_header, read_members

IDS = ["nul\x00inside", "long-" + "x" * 10_000, "plain-group"]


def hostile_snapshot(taken_at: int):
    """What the sampler makes of a cycle that saw IDS, one member with a NUL in its client id each."""
    names = {g: stored_name(g) for g in IDS}
    member = Member("m-1", plain_text("client\x00a"), "10.0.0.1")
    groups = [make_group(name, members=[replace(member, assignment=())]) for name in names.values()]
    snapshot = make_snapshot(taken_at, groups=groups)
    return replace(snapshot, full_ids={name: g for g, name in names.items() if name != g})


def test_hostile_group_ids_are_stored_and_their_whole_ids_kept(db_engine):
    Store(db_engine).write_snapshot(hostile_snapshot(T0))
    Store(db_engine).write_snapshot(hostile_snapshot(T0 + 1000))  # a restarted writer finds the same groups
    stored = {g.group_id for g in read_groups(db_engine, "c1")}
    assert stored == {stored_name(g) for g in IDS}
    for group in IDS:
        header = read_group_header(db_engine, "c1", stored_name(group))
        assert header.full_id == (None if group == "plain-group" else group)
        [member] = read_members(db_engine, "c1", stored_name(group))
        assert member.client_id == "client\ufffda"
