"""Clocks a wall-clock jump cannot fool (monitor/clock.py), with the wall and monotonic clocks injected."""

from __future__ import annotations

from factories import Clocks

from monitor.clock import CycleClock, RetentionClock

DAY, HOUR = 86_400_000, 3_600_000
T0 = Clocks().wall_at


def stamps(clocks: Clocks, clock, jump_at: int, jump_ms: int, cycles: int = 10) -> list[int]:
    out = []
    for i in range(cycles):
        if i == jump_at:
            clocks.wall_at += jump_ms
        out.append(clock())
        clocks.tick()
    return out


def test_cycles_are_stamped_by_the_wall_clock_while_it_behaves():
    clocks = Clocks()
    assert stamps(clocks, CycleClock(clocks.wall, clocks.monotonic), 99, 0, 3) == [T0, T0 + 1000, T0 + 2000]


def test_after_the_wall_clock_goes_back_an_hour_stamps_go_on_from_the_last_one():
    clocks = Clocks()
    got = stamps(clocks, CycleClock(clocks.wall, clocks.monotonic), 3, -HOUR, 6)
    assert got == [T0 + i * 1000 for i in range(6)]  # as if nothing happened: never back, never still


def test_once_the_wall_clock_catches_up_it_stamps_again():
    clocks = Clocks()
    clock = CycleClock(clocks.wall, clocks.monotonic)
    stamps(clocks, clock, 1, -3000, 3)  # 3 s back, then 3 cycles of a second each
    clocks.tick(5000)
    assert clock() == clocks.wall_at


def test_a_forward_jump_is_taken():
    clocks = Clocks()
    got = stamps(clocks, CycleClock(clocks.wall, clocks.monotonic), 2, 7 * DAY, 4)
    assert got == [T0, T0 + 1000, T0 + 2000 + 7 * DAY, T0 + 3000 + 7 * DAY]


def test_retention_never_runs_ahead_of_the_time_that_passed():
    clocks = Clocks()
    clock = RetentionClock(clocks.wall, clocks.monotonic)
    clocks.tick(60_000)
    clocks.wall_at += 7 * DAY
    assert clock() == T0 + 60_000


def test_retention_follows_a_wall_clock_that_went_back():
    clocks = Clocks()
    clock = RetentionClock(clocks.wall, clocks.monotonic)
    clocks.tick(60_000)
    clocks.wall_at -= HOUR
    assert clock() == T0 + 60_000 - HOUR
