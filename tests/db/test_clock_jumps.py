"""The store under a wall clock that jumps (monitor/clock.py): a real collector and retention on SQLite,
the wall and monotonic clocks injected. Nothing is folded or deleted early, no interval ends before it starts."""

from __future__ import annotations

from factories import Clocks, make_group, make_snapshot

from monitor.clock import CycleClock, RetentionClock
from monitor.collector import Collector
from monitor.models import GroupState, PartitionOffsets, TopicPartition
from monitor.store import Store, apply_retention

TP = TopicPartition("t", 0)
DAY, HOUR = 86_400_000, 3_600_000


class Steady:
    """One group committing 10 records a cycle; Empty from the 15th cycle on (an interval closes)."""

    def __init__(self):
        self.n = 0

    def fetch_snapshot(self, now_ms):
        self.n += 1
        state = GroupState.STABLE if self.n < 15 else GroupState.EMPTY
        group = make_group("g", state=state, committed={TP: 10 * self.n})
        return make_snapshot(now_ms(), groups=[group], partitions={TP: PartitionOffsets(0, 10 * self.n + 5)})


def run_across_a_jump(engine, jump_ms: int) -> None:
    """20 cycles a second apart, the wall clock jumping by `jump_ms` after the 10th; then retention runs."""
    clocks = Clocks()
    retention_now = RetentionClock(clocks.wall, clocks.monotonic)
    collector = Collector(Steady(), Store(engine), "c1", now_ms=CycleClock(clocks.wall, clocks.monotonic))
    for i in range(20):
        if i == 10:
            clocks.wall_at += jump_ms
        assert collector.poll_once().stored
        clocks.tick()
    apply_retention(engine, "c1", retention_now())


def sample_times(engine) -> list[int]:
    with engine.connect() as conn:
        return [t for (t,) in conn.exec_driver_sql("SELECT taken_at FROM samples ORDER BY id")]


def backward_intervals(engine) -> list[tuple]:
    with engine.connect() as conn:
        return [
            row
            for table in ("group_states", "group_members", "assignments")
            for row in conn.exec_driver_sql(
                f"SELECT '{table}', valid_from, valid_to FROM {table} WHERE valid_to < valid_from"
            )
        ]


def test_a_forward_jump_of_a_week_folds_and_deletes_nothing(sqlite_engine):
    run_across_a_jump(sqlite_engine, 7 * DAY)
    times = sample_times(sqlite_engine)
    assert len(times) == 20  # every raw sample kept: six hours have not passed, whatever the wall clock says
    assert times[10] - times[9] == 7 * DAY + 1000  # the jump is taken for the stamps (it may be a correction)
    assert backward_intervals(sqlite_engine) == []


def test_a_backward_jump_of_an_hour_keeps_stamps_and_intervals_in_order(sqlite_engine):
    run_across_a_jump(sqlite_engine, -HOUR)
    times = sample_times(sqlite_engine)
    assert times == sorted(times) and len(set(times)) == 20
    assert backward_intervals(sqlite_engine) == []
    with sqlite_engine.connect() as conn:
        ended = conn.exec_driver_sql("SELECT valid_from, valid_to FROM group_states WHERE valid_to IS NOT NULL").all()
    assert ended and all(end > start for start, end in ended)
