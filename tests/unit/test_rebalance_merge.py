"""One rebalance, one row: the merge rules of polled and tail rebalances, without a database.

Each case is a rebalance, the rows already stored around it, and where it must go.
"""

from __future__ import annotations

import pytest

from monitor.models import MemberRef, Rebalance, Trigger
from monitor.rebalancing.merge import (
    ALL,
    GENERATIONS,
    MEMBERS,
    Placement,
    StoredRebalance,
    free_start,
    place_polled,
    place_tail,
)

S = 1000  # ms


def tail(start_s, end_s, gen=(4, 5), trigger=Trigger.MEMBER_JOINED, protocol="eager"):
    return Rebalance(
        "g",
        start_s * S,
        None if end_s is None else end_s * S,
        protocol,
        trigger,
        members_before=1,
        members_after=2,
        joined=(MemberRef("m2", "c", "h"),),
        generation_before=gen[0],
        generation_after=gen[1],
        source="offsets_topic",
    )


def polled(start_s, end_s, trigger=Trigger.MEMBER_JOINED, protocol="eager"):
    return Rebalance("g", start_s * S, None if end_s is None else end_s * S, protocol, trigger, 1, 2)


def row(id, start_s, end_s, source, trigger="member_joined", protocol="eager", gen_before=None):
    end = None if end_s is None else end_s * S
    return StoredRebalance(id, start_s * S, end, source, trigger, protocol, gen_before)


TAIL_CASES = [
    ("nothing stored: a new row", tail(10, 12), [], Placement(None, ALL, {"started_at": 10 * S})),
    (
        "the end of our own unsettled row (same generation): exact members, the end time",
        tail(10, 12),
        [row(1, 10, None, "offsets_topic", gen_before=4)],
        Placement(1, MEMBERS | {"trigger", "generation_after"}, {"ended_at": 12 * S}),
    ),
    (
        "our own row, already merged with polling: the newest members, generation and end; polling's trigger stays",
        tail(10, 12),
        [row(1, 9, 13, "both", trigger="session_timeout", gen_before=4)],
        Placement(1, MEMBERS | {"generation_after"}, {"ended_at": 12 * S}),
    ),
    (
        "our own row, still unsettled: the end stays open",
        tail(10, None),
        [row(1, 10, None, "offsets_topic", gen_before=4)],
        Placement(1, MEMBERS | {"trigger", "generation_after"}, {}),
    ),
    (
        "the end is never before the row's start (a polled start may be later than the coordinator's end)",
        tail(10, 12),
        [row(1, 13, None, "both", gen_before=4)],
        Placement(1, MEMBERS | {"generation_after"}, {"ended_at": 13 * S}),
    ),
    (
        "a polled row around it: one row, source both, the tail's generations and members, polling's trigger",
        tail(10, 12),
        [row(7, 9, 14, "polling", trigger="session_timeout")],
        Placement(7, MEMBERS | GENERATIONS, {"source": "both", "ended_at": 12 * S}),
    ),
    (
        "a polled row that ends within the slack of the tail's end still merges",
        tail(10, 12),
        [row(7, 8, 11.5, "polling")],
        Placement(7, MEMBERS | GENERATIONS, {"source": "both", "ended_at": 12 * S}),
    ),
    (
        "an unsettled polled row that started before: merges",
        tail(10, 12),
        [row(7, 5, None, "polling")],
        Placement(7, MEMBERS | GENERATIONS, {"source": "both", "ended_at": 12 * S}),
    ),
    (
        "two polled rows around it: the earlier one",
        tail(10, 12),
        [row(8, 11, 13, "polling"), row(7, 9, 14, "polling")],
        Placement(7, MEMBERS | GENERATIONS, {"source": "both", "ended_at": 12 * S}),
    ),
    (
        "a polled row that ended over a second before: a different rebalance, a new row",
        tail(10, 12),
        [row(7, 5, 10.5, "polling")],
        Placement(None, ALL, {"started_at": 10 * S}),
    ),
    (
        "a polled row that starts over a second after: a different rebalance",
        tail(10, 12),
        [row(7, 13.5, 15, "polling")],
        Placement(None, ALL, {"started_at": 10 * S}),
    ),
    (
        "a tail row of another generation at the same millisecond: both rows stay, ours a millisecond later",
        tail(10, 12, gen=(5, 6)),
        [row(1, 10, 10, "offsets_topic", gen_before=4)],
        Placement(None, ALL, {"started_at": 10 * S + 1}),
    ),
]


@pytest.mark.parametrize(("why", "rebalance", "rows", "expected"), TAIL_CASES, ids=[c[0] for c in TAIL_CASES])
def test_where_a_tail_rebalance_goes(why, rebalance, rows, expected):
    assert place_tail(rebalance, rows) == expected


POLLED_CASES = [
    ("nothing stored: a new row", polled(10, 20), [], None, Placement(None, ALL, {"started_at": 10 * S})),
    (
        "our own polling row (it was unsettled): rewritten whole",
        polled(10, 20),
        [row(3, 10, None, "polling")],
        None,
        Placement(3, ALL),
    ),
    (
        "a tail row inside our bounds: merged into it; the tail's start and end stay",
        polled(10, 20, trigger=Trigger.MEMBER_JOINED, protocol="consumer"),
        [row(5, 12, 13, "offsets_topic", trigger="member_joined", protocol="consumer")],
        None,
        Placement(5, frozenset(), {"source": "both"}, merged=True),
    ),
    (
        "the tail could not tell a session timeout from a clean leave: polling's trigger wins",
        polled(10, 20, trigger=Trigger.SESSION_TIMEOUT, protocol="consumer"),
        [row(5, 12, 13, "offsets_topic", trigger="member_left", protocol="consumer")],
        None,
        Placement(5, frozenset(), {"source": "both", "trigger": "session_timeout"}, merged=True),
    ),
    (
        "the tail's trigger was unknown: polling's is taken",
        polled(10, 20, trigger=Trigger.PARTITIONS_ADDED, protocol="consumer"),
        [row(5, 12, 13, "offsets_topic", trigger="unknown", protocol="consumer")],
        None,
        Placement(5, frozenset(), {"source": "both", "trigger": "partitions_added"}, merged=True),
    ),
    (
        "classic: the tail sees only the new generation, so polling's earlier start is taken",
        polled(10, 20),
        [row(5, 12, 12, "offsets_topic")],
        None,
        Placement(5, frozenset(), {"source": "both", "started_at": 10 * S}, merged=True),
    ),
    (
        "an unsettled tail row gets polling's end",
        polled(10, 20, protocol="consumer"),
        [row(5, 12, None, "offsets_topic", protocol="consumer")],
        None,
        Placement(5, frozenset(), {"source": "both", "ended_at": 20 * S}, merged=True),
    ),
    (
        "an unsettled polled rebalance reaches ten minutes ahead for a tail row",
        polled(10, None, protocol="consumer"),
        [row(5, 500, 501, "offsets_topic", protocol="consumer")],
        None,
        Placement(5, frozenset(), {"source": "both"}, merged=True),
    ),
    (
        "a tail row outside the bounds and the slack: a different rebalance",
        polled(10, 20),
        [row(5, 21.5, 22, "offsets_topic"), row(6, 5, 8.5, "offsets_topic")],
        None,
        Placement(None, ALL, {"started_at": 10 * S}),
    ),
    (
        "a row merged on an earlier cycle is found again, though it is 'both' now",
        polled(10, 20),
        [row(5, 10, 12, "both")],
        5,
        Placement(5, frozenset(), {"source": "both"}, merged=True),
    ),
    (
        "the tail merged into our unsettled row: its facts stay, ours add protocol, trigger, an end",
        polled(10, 20, trigger=Trigger.SESSION_TIMEOUT),
        [row(3, 10, None, "both")],
        None,
        Placement(3, frozenset({"protocol", "trigger"}), {"ended_at": 20 * S}),
    ),
    (
        "... and when polling knows no trigger, the tail's stays; the tail's end too",
        polled(10, 20, trigger=Trigger.UNKNOWN),
        [row(3, 10, 12, "both")],
        None,
        Placement(3, frozenset({"protocol"}), {"ended_at": 12 * S}),
    ),
]


@pytest.mark.parametrize(
    ("why", "rebalance", "rows", "merged_id", "expected"), POLLED_CASES, ids=[c[0] for c in POLLED_CASES]
)
def test_where_a_polled_rebalance_goes(why, rebalance, rows, merged_id, expected):
    assert place_polled(rebalance, rows, merged_id) == expected


def test_free_start_moves_past_every_taken_millisecond():
    assert free_start(100, set()) == 100
    assert free_start(100, {100, 101, 103}) == 102


def test_the_rules_name_every_column_the_store_writes():
    from monitor.store.rebalances import rebalance_values

    assert set(rebalance_values(polled(10, 20))) == ALL
