"""The collector process's garbage collection: after each cycle, never in the middle of one."""

import gc
import weakref

import pytest

from monitor.pacing import GarbagePacer


class Node:
    """A reference cycle: only the garbage collector frees it."""

    def __init__(self):
        self.me = self


@pytest.fixture
def pacer_clock():
    now = [0.0]
    yield now
    gc.enable()


def test_young_garbage_is_freed_after_the_first_cycle_that_ends_10_s_on(pacer_clock):
    pacer = GarbagePacer(young_every_s=10, full_every_s=60, clock=lambda: pacer_clock[0])
    node = Node()
    gone = weakref.ref(node)
    del node
    survivors = [[] for _ in range(10 * gc.get_threshold()[0])]  # would have set off automatic collections
    assert gone() is not None and survivors
    pacer_clock[0] = 9.0
    pacer("cycle result", "snapshot", "report")
    assert gone() is not None
    pacer_clock[0] = 10.5
    pacer("cycle result", "snapshot", "report")
    assert gone() is None


def test_old_garbage_waits_for_the_full_collection_once_a_minute(pacer_clock):
    pacer = GarbagePacer(young_every_s=10, full_every_s=60, clock=lambda: pacer_clock[0])
    node = Node()
    gone = weakref.ref(node)
    gc.collect(1)  # it survives a young collection while still in use: now in the oldest generation
    del node
    pacer_clock[0] = 30.0  # a young collection is due: it leaves the oldest generation alone
    pacer()
    assert gone() is not None
    pacer_clock[0] = 60.0
    pacer()
    assert gone() is None
