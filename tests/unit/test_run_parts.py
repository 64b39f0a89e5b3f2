"""`stopping.run_parts`: the collector's parts start in order and are joined in reverse, also after a failure."""

from __future__ import annotations

import threading

import pytest

from monitor.stopping import run_parts


class Part:
    """Records its start, and (through the thread it returns) when it is joined."""

    def __init__(self, name: str, log: list[str], fails: bool = False):
        self.name, self.log, self.fails = name, log, fails

    def start(self, stop: threading.Event):
        if self.fails:
            raise OSError(f"{self.name} cannot start")
        self.log.append(f"start {self.name}")
        return self

    def join(self, timeout=None) -> None:
        self.log.append(f"join {self.name}")


def test_parts_start_in_order_around_the_loop_and_are_joined_in_reverse():
    log: list[str] = []
    stop = threading.Event()

    def loop():
        log.append("loop")
        return 7

    assert run_parts([Part("a", log), Part("b", log), Part("c", log)], stop, loop, 1.0) == 7
    assert log == ["start a", "start b", "start c", "loop", "join c", "join b", "join a"]
    assert stop.is_set()


def test_a_loop_that_fails_still_stops_and_joins_every_part():
    log: list[str] = []
    stop = threading.Event()

    def loop():
        raise RuntimeError("the store refused")

    with pytest.raises(RuntimeError):
        run_parts([Part("a", log), Part("b", log)], stop, loop, 1.0)
    assert log == ["start a", "start b", "join b", "join a"] and stop.is_set()


def test_a_part_that_fails_to_start_stops_the_ones_before_it_and_the_loop_never_runs():
    log: list[str] = []
    stop = threading.Event()
    with pytest.raises(OSError, match="b cannot start"):
        run_parts([Part("a", log), Part("b", log, fails=True), Part("c", log)], stop, lambda: log.append("loop"), 1.0)
    assert log == ["start a", "join a"] and stop.is_set()
