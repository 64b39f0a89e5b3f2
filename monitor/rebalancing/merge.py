"""One rebalance, one row: where a rebalance from polling or from the offsets-topic tail goes.

The store fetches the group's rows around the rebalance (`StoredRebalance`); these rules say
which row to change and how (`Placement`), and the store carries it out. A polled rebalance
that overlaps a tail row (within MERGE_SLACK_MS) merges into it, and a tail rebalance into
an overlapping polled row: the tail's exact generations and members stay, polling's trigger
stays when it knows more (docs/architecture.md section 5).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from monitor.models import Rebalance, Trigger

MERGE_SLACK_MS = 1000  # a tail rebalance this close to a polled one's bounds is the same rebalance
UNSETTLED_SPAN_MS = 10 * 60_000  # how far an unsettled polled rebalance may reach for a tail row
POLLING, TAIL, BOTH = "polling", "offsets_topic", "both"

# The columns of a rebalance row, by what knows them best.
MEMBERS = frozenset({"members_before", "members_after", "members_joined", "members_left", "partitions_moved"})
GENERATIONS = frozenset({"generation_before", "generation_after"})
ALL = MEMBERS | GENERATIONS | {"ended_at", "protocol", "trigger", "source"}


@dataclass(frozen=True)
class StoredRebalance:
    """The part of a stored row the merge rules look at."""

    id: int
    started_at: int
    ended_at: int | None
    source: str
    trigger: str
    protocol: str
    generation_before: int | None


@dataclass(frozen=True)
class Placement:
    """Update row `row_id` (a new row when None): the columns in `take` from the rebalance, then `set`.

    `merged` marks a polled rebalance written into the tail's row, which the writer remembers.
    """

    row_id: int | None
    take: frozenset[str]
    set: dict = field(default_factory=dict)
    merged: bool = False


def tail_window(r: Rebalance) -> tuple[int, int]:
    """The time span the tail rule looks at; the store also fetches rows of the same generation."""
    return r.started_at - MERGE_SLACK_MS, _moment(r) + MERGE_SLACK_MS


def polled_window(r: Rebalance) -> tuple[int, int]:
    end = r.ended_at if r.ended_at is not None else r.started_at + UNSETTLED_SPAN_MS
    return r.started_at - MERGE_SLACK_MS, end + MERGE_SLACK_MS


def place_tail(r: Rebalance, rows: Sequence[StoredRebalance]) -> Placement:
    """Complete the tail's own row (same generation), merge into an overlapping polled row, or add one."""
    own = next((x for x in rows if x.source in (TAIL, BOTH) and x.generation_before == r.generation_before), None)
    if own is not None:  # the members are those of the newest generation; polling's trigger stays
        take = MEMBERS | {"generation_after"} | ({"trigger"} if own.source == TAIL else set())
        return Placement(own.id, frozenset(take), _ended(r, own))
    moment = _moment(r)
    polled = [
        x
        for x in rows
        if x.source == POLLING
        and x.started_at - MERGE_SLACK_MS <= moment
        and (x.ended_at is None or x.ended_at + MERGE_SLACK_MS >= moment)
    ]
    if polled:
        first = min(polled, key=lambda x: x.started_at)
        return Placement(first.id, MEMBERS | GENERATIONS, {"source": BOTH, **_ended(r, first)})
    return Placement(None, ALL, {"started_at": free_start(r.started_at, {x.started_at for x in rows})})


def place_polled(r: Rebalance, rows: Sequence[StoredRebalance], merged_id: int | None = None) -> Placement:
    """Merge into the tail's row of this rebalance, complete our own row, or add one.

    `merged_id` is the tail row this rebalance merged into on an earlier cycle, if any.
    """
    at_start = next((x for x in rows if x.started_at == r.started_at), None)
    merged = next((x for x in rows if x.id == merged_id), None)
    if merged is None and at_start is None:
        merged = _tail_row_within(r, rows)
    if merged is not None:
        values = _polled_into_tail(r, merged, start_taken=at_start is not None)
        return Placement(merged.id, frozenset(), values, merged=True)
    if at_start is None:
        return Placement(None, ALL, {"started_at": r.started_at})
    if at_start.source == POLLING:
        return Placement(at_start.id, ALL)
    # The tail merged into our unsettled row: its exact facts stay.
    take = frozenset({"protocol"} | (set() if r.trigger is Trigger.UNKNOWN else {"trigger"}))
    ended = at_start.ended_at if at_start.ended_at is not None else r.ended_at
    return Placement(at_start.id, take, {"ended_at": ended})


def free_start(started_at: int, taken: set[int]) -> int:
    """Two rebalances of one group in one millisecond keep both rows: the second moves up."""
    while started_at in taken:
        started_at += 1
    return started_at


def _moment(r: Rebalance) -> int:
    return r.ended_at if r.ended_at is not None else r.started_at


def _ended(r: Rebalance, row: StoredRebalance) -> dict:
    """The coordinator's own end time is exact; an unsettled tail rebalance keeps the row's."""
    return {} if r.ended_at is None else {"ended_at": max(r.ended_at, row.started_at)}


def _tail_row_within(r: Rebalance, rows: Sequence[StoredRebalance]) -> StoredRebalance | None:
    lo, hi = polled_window(r)
    inside = [x for x in rows if x.source == TAIL and _end_or_start(x) >= lo and x.started_at <= hi]
    return min(inside, key=lambda x: x.started_at, default=None)


def _end_or_start(x: StoredRebalance) -> int:
    return x.ended_at if x.ended_at is not None else x.started_at


def _polled_into_tail(r: Rebalance, row: StoredRebalance, start_taken: bool) -> dict:
    """Polling adds what the tail cannot know: a session-timeout trigger, an end, a classic start."""
    values: dict = {"source": BOTH}
    if row.trigger == Trigger.UNKNOWN or r.trigger is Trigger.SESSION_TIMEOUT:
        values["trigger"] = r.trigger.value
    if row.ended_at is None and r.ended_at is not None:
        values["ended_at"] = r.ended_at
    if row.protocol != "consumer" and r.started_at < row.started_at and not start_taken:
        values["started_at"] = r.started_at  # classic: the tail saw no start
    return values
